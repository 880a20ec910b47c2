-- claim(code_versions => array[current, older...]) records the first element on a task the
-- first time it is claimed, never overwrites it, and answers it (claimed_task.code_version);
-- a claim without code_versions records nothing. Claimed as conductor_worker.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';
update conductor.settings set fake_clock = true;

select conductor.enqueue('k', '{}', 'cv-rec') as t1 \gset
select conductor.enqueue('k', '{}', 'cv-rec-none') as t2 \gset

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

select results_eq(
  $$select task_id, code_version from conductor.claim('w-v2', array['cv-rec'], 1, '1 second',
                                                        code_versions => array['v2', 'v1'])$$,
  format($$values (%s::bigint, 'v2'::text)$$, :t1),
  'The first claim records and answers the worker''s own version, the first of its list.');
select results_eq(
  $$select task_id, code_version from conductor.claim('w-none', array['cv-rec-none'], 1, '1 second')$$,
  format($$values (%s::bigint, null::text)$$, :t2),
  'A claim without code_versions records none.');
reset role;
select is((select code_version from conductor.tasks where id = :t1), 'v2', 'The task keeps v2.');
select is((select code_version from conductor.tasks where id = :t2), null, 'The other keeps none.');

-- both leases pass; reap takes them back and a worker of v3 that still replays v2 claims them
set local conductor.fake_now = '2030-01-01 00:00:10+00';
select conductor.reap() as r \gset
set local role t_worker;
select results_eq(
  $$select task_id, code_version from conductor.claim('w-v3', array['cv-rec', 'cv-rec-none'], 10, '1 second',
                                                        code_versions => array['v3', 'v2'])
     order by task_id$$,
  format($$values (%s::bigint, 'v2'::text), (%s, 'v3')$$, :t1, :t2),
  'A later claim keeps the recorded v2, and records v3 on the task nobody versioned before.');
reset role;
select is((select count(*) from conductor.attempts where task_id = :t1), 2::bigint, 'Two attempts of the first task.');

select * from finish();
rollback;
