-- A client cancels the task, and commits, while the handler's transaction is open:
-- complete_in_transaction raises QC202 (cancelled) and the rollback takes the handler's
-- write with it. The client's role is conductor_client only (see fixture.psql).
begin;
select plan(3);
\ir ../helpers.psql
\ir fixture.psql

select pg_temp.running() as a1 \gset
select pg_temp.task_of(:a1) as t1 \gset
select pg_temp.work(:a1) as w1 \gset
select is((select n from dblink('client', format('select conductor.cancel(%s)', :t1)) as r(n int)), 1,
  'The client cancels the running task while the handler''s transaction is open.');
select pg_temp.send_complete(:a1) as s1 \gset
select is(pg_temp.answer(), 'QC202', 'complete_in_transaction raises QC202 (cancelled).');
select dblink_exec('worker', 'rollback') as k1 \gset
select is(pg_temp.status(:t1) || ' ' || pg_temp.effects(:t1), 'cancelled 0',
  'Rolled back: the task stays cancelled, with no effect row.');

\ir cleanup.psql
select * from finish();
rollback;
