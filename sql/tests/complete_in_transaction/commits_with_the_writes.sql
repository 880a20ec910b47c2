-- complete_in_transaction, called in the handler's transaction after its writes, finishes
-- the task exactly when those writes commit: before the COMMIT another session sees neither
-- the effect row nor the success; after it, both. A transaction that rolls back leaves
-- neither, and the attempt still holds its task: the handler's next transaction completes it.
-- The worker's session is a login in conductor_worker only (see fixture.psql).
begin;
select plan(9);
\ir ../helpers.psql
\ir fixture.psql

select pg_temp.running() as a1 \gset
select pg_temp.task_of(:a1) as t1 \gset
select pg_temp.work(:a1) as w1 \gset
select pg_temp.send_complete(:a1) as s1 \gset
select is(pg_temp.answer(), 'ok', 'complete_in_transaction answers in the worker''s open transaction.');
select is(pg_temp.status(:t1) || ' ' || pg_temp.effects(:t1), 'running 0',
  'Before the commit, others see the task running and no effect row.');
select dblink_exec('worker', 'commit') as k1 \gset
select is(pg_temp.status(:t1) || ' ' || pg_temp.effects(:t1), 'succeeded 1',
  'After the commit, the task succeeded and its effect row is there, once.');
select is((select r from dblink('stage', format('select result::text from conductor.tasks where id = %s', :t1)) as x(r text)),
  '{"n": 1}', 'The task holds the result given.');
select is((select o from dblink('stage', format('select outcome from conductor.attempts where id = %s', :a1)) as x(o text)),
  'succeeded', 'The attempt is recorded as succeeded.');

select pg_temp.running() as a2 \gset
select pg_temp.task_of(:a2) as t2 \gset
select pg_temp.work(:a2) as w2 \gset
select pg_temp.send_complete(:a2) as s2 \gset
select is(pg_temp.answer(), 'ok', 'A second task completes in its transaction ...');
select dblink_exec('worker', 'rollback') as k2 \gset
select is(pg_temp.status(:t2) || ' ' || pg_temp.effects(:t2), 'running 0',
  '... which rolls back: neither the effect nor the success is stored, the task still runs.');
select pg_temp.work(:a2) as w3 \gset
select pg_temp.send_complete(:a2) as s3 \gset
select is(pg_temp.answer(), 'ok', 'The attempt still holds its task: its next transaction completes it.');
select dblink_exec('worker', 'commit') as k3 \gset
select is(pg_temp.status(:t2) || ' ' || pg_temp.effects(:t2), 'succeeded 1', 'The task succeeded with one effect row.');

\ir cleanup.psql
select * from finish();
rollback;
