-- The worker goes on beating while a handler's transaction is open. A beat committed
-- between the handler's write and its completion changes the task row (the lease);
-- complete_in_transaction, at READ COMMITTED, locks the row as the beat left it and
-- completes. A beat sent while the handler's transaction holds the task row (completed,
-- not yet committed) skips that row instead of waiting for it, and answers nothing for it;
-- after the commit the next beat answers 'finished'.
begin;
select plan(5);
\ir ../helpers.psql
\ir fixture.psql

select pg_temp.running() as a1 \gset
select pg_temp.task_of(:a1) as t1 \gset
select pg_temp.work(:a1) as w1 \gset
select is((select count(*) from dblink('beat', format(
  'select attempt_id from conductor.heartbeat(worker_id => %L, attempt_ids => array[%s]::bigint[])', 'w-' || :'q', :a1))
  as r(a bigint)), 0::bigint, 'A beat during the handler''s transaction extends the lease (nothing answered).');
select pg_temp.send_complete(:a1) as s1 \gset
select is(pg_temp.answer(), 'ok', 'complete_in_transaction completes after the beat changed the row.');
select is((select count(*) from dblink('beat', format(
  'select attempt_id from conductor.heartbeat(worker_id => %L, attempt_ids => array[%s]::bigint[])', 'w-' || :'q', :a1))
  as r(a bigint)), 0::bigint, 'A beat while the completed row is held returns at once, skipping it.');
select dblink_exec('worker', 'commit') as k1 \gset
select is((select s from dblink('beat', format(
  'select state from conductor.heartbeat(worker_id => %L, attempt_ids => array[%s]::bigint[])', 'w-' || :'q', :a1))
  as r(s text)), 'finished', 'After the commit, the beat answers finished.');
select is(pg_temp.status(:t1) || ' ' || pg_temp.effects(:t1), 'succeeded 1', 'The task succeeded with its effect row.');

\ir cleanup.psql
select * from finish();
rollback;
