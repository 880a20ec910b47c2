-- retry(keep_steps => false) starts the run over with nothing to replay, so it forgets the
-- code version the run started on: the next claimer records its own. With the steps kept,
-- the version stays (the steps were made by that code).
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';
update conductor.settings set fake_clock = true;

select conductor.enqueue('k', '{}', 'retry-cv-keep') as keep \gset
select conductor.enqueue('k', '{}', 'retry-cv-drop') as dropped \gset
select count(*) from conductor.claim('w-v1', array['retry-cv-keep', 'retry-cv-drop'], 2, code_versions => array['v1']);
select attempt_id as ak from conductor.tasks where id = :keep \gset
select attempt_id as ad from conductor.tasks where id = :dropped \gset
select conductor.save_step(:ak, 'charge', '1') as s1 \gset
select conductor.save_step(:ad, 'charge', '1') as s2 \gset
select conductor.fail(:ak, 'boom') as f1 \gset
select conductor.fail(:ad, 'boom') as f2 \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select conductor.retry(:keep) as r1 \gset
select conductor.retry(:dropped, keep_steps => false) as r2 \gset
reset role;
select is((select code_version from conductor.tasks where id = :keep), 'v1', 'Steps kept: the run keeps v1.');
select is((select code_version from conductor.tasks where id = :dropped), null, 'Steps dropped: the version is forgotten.');
select results_eq(
  $$select task_id, code_version from conductor.claim('w-v2', array['retry-cv-keep', 'retry-cv-drop'], 10,
                                                        code_versions => array['v2']) order by task_id$$,
  format($$values (%s::bigint, 'v2'::text)$$, :dropped),
  'A v2 worker takes the run started over (recording v2), not the one that replays v1 steps.');
select is((select status::text from conductor.tasks where id = :keep), 'queued', 'The v1 run waits for a v1 worker.');

select * from finish();
rollback;
