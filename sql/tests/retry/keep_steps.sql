-- retry of a timed-out run keeps its checkpointed steps, so the replay resumes after them;
-- with keep_steps => false they are deleted and the run starts over.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create temp table runs (name text, id bigint);
do $$
declare
  v_name text;
  v_task bigint;
  v_attempt bigint;
begin
  foreach v_name in array array['keep', 'drop'] loop
    v_task := conductor.enqueue('root', '{}', 'retry-steps-' || v_name);
    v_attempt := conductor_tests.claim_one('retry-steps-' || v_name);
    perform conductor.save_step(v_attempt, 'charge', '"ch_1"');
    perform conductor.spawn(v_attempt, 'kid', 'kid', '{}', 'retry-steps-kids');
    perform conductor.suspend(v_attempt, 'join', 'children_all');
    insert into runs values (v_name, v_task);
  end loop;
end
$$;
select id as keep from runs where name = 'keep' \gset
select id as dropped from runs where name = 'drop' \gset
set local conductor.fake_now = '2030-01-01 04:00:00+00';
select conductor.reap() as r \gset
select is((select array_agg(status::text order by id) from conductor.tasks where id in (:keep, :dropped)),
  array['timed_out', 'timed_out'], 'Setup: both runs timed out waiting for their child.');

select is(conductor.retry(:keep), :keep::bigint, 'retry of a timed-out run returns its id.');
select results_eq(format($$select steps from conductor.claim('w2', array['retry-steps-keep'])$$),
  format($$values (jsonb_build_object('charge', 'ch_1', 'kid', jsonb_build_object('task_id', %s)))$$,
         (select id from conductor.tasks where parent_id = :keep)),
  'The retried run is claimed with its finished steps kept.');

select is(conductor.retry(:dropped, keep_steps => false), :dropped::bigint, 'retry with keep_steps => false returns its id.');
select results_eq($$select steps from conductor.claim('w2', array['retry-steps-drop'])$$,
  $$values ('{}'::jsonb)$$,
  'The run retried without its steps is claimed with none.');

select * from finish();
rollback;
