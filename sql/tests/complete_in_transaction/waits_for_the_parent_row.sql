-- A child's end locks its parent's row (the trigger tasks_child_finished wakes a parent
-- waiting for its children). complete_in_transaction locks the parent's row after the
-- child's and waits for another transaction that holds it (complete would give up after
-- 200 ms and raise 55P03, aborting the handler's writes); once that transaction ends, the
-- child completes with its writes and, at the commit, its parent is woken.
begin;
select plan(5);
\ir ../helpers.psql
\ir fixture.psql

select pg_temp.running() as parent_attempt \gset
select pg_temp.task_of(:parent_attempt) as parent \gset
select c as child from dblink('worker', format(
  $s$select conductor.spawn(attempt_id => %s, step => 'kid', kind => 'k', queue => %L)$s$, :parent_attempt, :'q'))
  as r(c bigint) \gset
select is((select s from dblink('worker', format(
  $s$select state from conductor.suspend(attempt_id => %s, step => 'join', wait_for => 'children_all')$s$, :parent_attempt))
  as r(s text)), 'waiting', 'The parent waits for its child.');
select r.a as child_attempt from dblink('worker', format(
  'select attempt_id from conductor.claim(worker_id => %L, queues => array[%L])', 'w-' || :'q', :'q')) as r(a bigint) \gset

select dblink_exec('stage', 'begin') as b1 \gset
select n as held from dblink('stage', format(
  'select id from conductor.tasks where id = %s for no key update', :parent)) as r(n bigint) \gset
select pg_temp.work(:child_attempt) as w1 \gset
select pg_temp.send_complete(:child_attempt) as s1 \gset
select ok(conductor_tests.await_lock_wait(:worker_pid), 'The child''s completion waits for the transaction holding its parent''s row ...');
select is(pg_temp.settle(), 'waits', '... past complete''s 200 ms.');
select dblink_exec('stage', 'rollback') as k1 \gset
select is(pg_temp.answer(), 'ok', 'That transaction ended: the child completes.');
select dblink_exec('worker', 'commit') as k2 \gset
select is(pg_temp.status(:child) || ' ' || pg_temp.effects(:child) || ', parent ' || pg_temp.status(:parent),
  'succeeded 1, parent queued', 'The child succeeded with its effect row, and its parent was woken.');

\ir cleanup.psql
select * from finish();
rollback;
