-- A fork that carries steps carries the code version they were saved under: only a
-- worker that can replay it takes the copy (schema/code_versions); a fork from the
-- first step carries nothing, and no version.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('order', '{}', 'fork-ver') as t \gset
select a.attempt_id as a from conductor.claim('w1', array['fork-ver'], code_versions => array['v1']) a \gset
select conductor.save_step(:a, name, to_jsonb(name)) from unnest(array['reserve', 'charge']) name;
select conductor.complete(:a, '{}') as c \gset

select conductor.fork(:t, 'charge') as f \gset
select conductor.fork(:t, 'reserve') as fresh \gset
select is((select code_version from conductor.tasks where id = :f), 'v1',
  'The copy carries the source''s code version with its steps.');
select is((select code_version from conductor.tasks where id = :fresh), null,
  'A copy without steps has no version: any worker may start it.');
select is((select count(*)::int from conductor.claim('w2', array['fork-ver'], max_tasks => 2, code_versions => array['v2'])),
  1, 'A v2 worker that cannot replay v1 takes only the copy without steps.');
select results_eq($$select task_id, steps from conductor.claim('w3', array['fork-ver'], code_versions => array['v2', 'v1'])$$,
  format($$values (%s::bigint, '{"reserve": "reserve"}'::jsonb)$$, :f),
  'A worker that replays v1 takes the copy with its step.');

select * from finish();
rollback;
