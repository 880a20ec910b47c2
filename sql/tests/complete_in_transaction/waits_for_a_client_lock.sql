-- complete gives up after 200 ms on a task row another transaction holds (55P03); in the
-- handler's own transaction that would abort the handler's writes although its attempt
-- still holds the task. complete_in_transaction waits for the holder instead: a client's
-- cancel() left open in its transaction. When the client rolls back, the task completes
-- with the handler's writes; when the client commits, the call raises QC202 and the
-- handler's transaction rolls back.
begin;
select plan(8);
\ir ../helpers.psql
\ir fixture.psql

select pg_temp.running() as a1 \gset
select pg_temp.task_of(:a1) as t1 \gset
select pg_temp.work(:a1) as w1 \gset
select dblink_exec('client', 'begin') as b1 \gset
select is((select n from dblink('client', format('select conductor.cancel(%s)', :t1)) as r(n int)), 1,
  'The client''s cancel, in its open transaction, holds the task''s row.');
select pg_temp.send_complete(:a1) as s1 \gset
select ok(conductor_tests.await_lock_wait(:worker_pid), 'complete_in_transaction waits for the client''s lock ...');
select is(pg_temp.settle(), 'waits', '... past complete''s 200 ms.');
select dblink_exec('client', 'rollback') as k1 \gset
select is(pg_temp.answer(), 'ok', 'The client rolled back: the call returns and completes the task.');
select dblink_exec('worker', 'commit') as k2 \gset
select is(pg_temp.status(:t1) || ' ' || pg_temp.effects(:t1), 'succeeded 1', 'The task succeeded with its effect row.');

select pg_temp.running() as a2 \gset
select pg_temp.task_of(:a2) as t2 \gset
select pg_temp.work(:a2) as w2 \gset
select dblink_exec('client', 'begin') as b2 \gset
select n as cancelled from dblink('client', format('select conductor.cancel(%s)', :t2)) as r(n int) \gset
select pg_temp.send_complete(:a2) as s2 \gset
select ok(conductor_tests.await_lock_wait(:worker_pid), 'A second call waits for the client''s open cancel ...');
select dblink_exec('client', 'commit') as k3 \gset
select is(pg_temp.answer(), 'QC202', '... which commits: the call raises QC202 (cancelled).');
select dblink_exec('worker', 'rollback') as k4 \gset
select is(pg_temp.status(:t2) || ' ' || pg_temp.effects(:t2), 'cancelled 0', 'The task is cancelled, with no effect row.');

\ir cleanup.psql
select * from finish();
rollback;
