-- stats().unrunnable counts, per queue, the queued tasks (due or not) that no worker seen
-- within unknown_kind_after can run: none serves both the task's queue and its kind.
-- Read as conductor_client, the role stats is granted to.
begin;
select plan(4);
\ir ../helpers.psql
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('w-a', queues => '{stu-1}', kinds => '{A}') as r \gset
select conductor.register_worker('w-all', queues => '{stu-2}') as r \gset
select conductor.enqueue('A', '{}', 'stu-1') as x \gset
select conductor.enqueue('B', '{}', 'stu-1') as x \gset
select conductor.enqueue('B', '{}', 'stu-1', run_at => '2030-01-02 00:00:00+00') as x \gset
select conductor.enqueue('B', '{}', 'stu-2') as x \gset
select conductor.enqueue('B', '{}', 'stu-3') as x \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select results_eq($$select queue, ready, scheduled, unrunnable from conductor.stats() where queue like 'stu-%'$$,
  $$values ('stu-1'::text, 2::bigint, 1::bigint, 2::bigint), ('stu-2', 1, 0, 0), ('stu-3', 1, 0, 1)$$,
  'stu-1: two B tasks (one due later) no worker can run; stu-2: a worker without kinds runs all; stu-3: no worker.');

set local conductor.fake_now = '2030-01-01 00:05:00+00';
select is((select unrunnable from conductor.stats() where queue = 'stu-1'), 2::bigint,
  'A worker seen exactly unknown_kind_after ago is still live.');
set local conductor.fake_now = '2030-01-01 00:05:00.000001+00';
select is((select unrunnable from conductor.stats() where queue = 'stu-1'), 3::bigint,
  'Once it has not been seen for longer, none of the queue''s tasks can run.');
select is((select unrunnable from conductor.stats() where queue = 'stu-2'), 1::bigint,
  'Nor can the other queue''s.');
reset role;

select * from finish();
rollback;
