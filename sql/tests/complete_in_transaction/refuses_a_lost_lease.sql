-- Fencing holds inside the handler's transaction. The lease expired while the handler's
-- transaction was open (its worker stopped beating) and the reaper took the task back:
-- complete_in_transaction raises QC201 (lease lost), the transaction is rolled back, and
-- the handler's write is gone with it. Then the task's next attempt completes it, and the
-- first attempt's late transaction is still refused (QC201): one effect row.
begin;
select plan(6);
\ir ../helpers.psql
\ir fixture.psql

select dblink_exec('stage', $$set conductor.fake_now = '2030-01-01 00:00:00+00'$$) as f0 \gset
select dblink_exec('worker', $$set conductor.fake_now = '2030-01-01 00:00:00+00'$$) as f1 \gset
select pg_temp.running() as a1 \gset
select pg_temp.task_of(:a1) as t1 \gset
select pg_temp.work(:a1) as w1 \gset
select dblink_exec('stage', $$set conductor.fake_now = '2030-01-01 00:02:00+00'$$) as f2 \gset
select is((select n from dblink('stage', 'select conductor.reap()') as r(n int)), 1,
  'While the handler''s transaction is open, the reaper takes the task back (its row is not locked yet).');
select pg_temp.send_complete(:a1) as s1 \gset
select is(pg_temp.answer(), 'QC201', 'complete_in_transaction then raises QC201 (lease lost).');
select dblink_exec('worker', 'rollback') as k1 \gset
select is(pg_temp.status(:t1) || ' ' || pg_temp.effects(:t1), 'queued 0',
  'Rolled back: no effect row, and the task is queued again.');

select dblink_exec('worker', $$set conductor.fake_now = '2030-01-01 00:02:00+00'$$) as f3 \gset
select r.a as a2 from dblink('worker', format(
  'select attempt_id from conductor.claim(worker_id => %L, queues => array[%L])', 'w-' || :'q', :'q')) as r(a bigint) \gset
select pg_temp.work(:a2) as w2 \gset
select pg_temp.send_complete(:a2) as s2 \gset
select is(pg_temp.answer(), 'ok', 'The next attempt completes in its transaction.');
select dblink_exec('worker', 'commit') as k2 \gset
select pg_temp.work(:a1) as w3 \gset
select pg_temp.send_complete(:a1) as s3 \gset
select is(pg_temp.answer(), 'QC201', 'The first attempt''s late transaction is refused with QC201.');
select dblink_exec('worker', 'rollback') as k3 \gset
select is(pg_temp.status(:t1) || ' ' || pg_temp.effects(:t1), 'succeeded 1', 'The task succeeded with one effect row.');

\ir cleanup.psql
select * from finish();
rollback;
