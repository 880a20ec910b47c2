-- sleep() answers false ("not settled") while an enqueue into one of its queues is in flight:
-- that enqueue may have read conductor.sleepers before the mark, so it will not notify, and
-- the worker's re-check claim cannot see its task before it commits; the worker must look
-- again shortly. The enqueue holds a shared advisory lock on its queue (and on 'any queue')
-- until it commits; sleep() try-locks them. A sleep on other queues is not concerned; a
-- sleep on every queue (NULL) is. Once the enqueue commits, sleep is settled again.
-- A dblink session holds the enqueue open; the sleep calls run in this session (their marks
-- are uncommitted, rolled back at the end).
begin;
select plan(7);
\ir ../helpers.psql
create extension if not exists dblink;

select 'sleep-inflight-' || pg_backend_pid() as q \gset
select 'w-sleep-inflight-' || pg_backend_pid() as w \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c1 \gset

select dblink_exec('writer', 'begin') as b \gset
select t as task_id from dblink('writer', format($$select conductor.enqueue('k', '{}', %L)$$, :'q')) as r(t bigint) \gset

select is(conductor.sleep(:'w', array[:'q']), false,
  'An uncommitted enqueue into the queue: sleep is not settled (false).');
select set_eq(format('select queue from conductor.sleepers where worker_id = %L', :'w'),
  format('values (%L::text)', :'q'),
  'An unsettled sleep still writes its mark.');
select is(conductor.sleep(:'w', array[:'q' || '-other', :'q']), false,
  'A list that holds the busy queue among others is not settled.');
select is(conductor.sleep(:'w', array[:'q' || '-other']), true,
  'A sleep on another queue only is settled.');
select is(conductor.sleep(:'w', null), false,
  'A sleep on every queue (NULL) is not settled while any enqueue is in flight.');

select dblink_exec('writer', 'commit') as c \gset
select is(conductor.sleep(:'w', array[:'q']), true,
  'Once the enqueue committed, sleep on its queue is settled.');
select set_eq(format('select queue from conductor.sleepers where worker_id = %L', :'w'),
  format('values (%L::text)', :'q'),
  'The last sleep''s marks replaced the earlier ones.');

-- Clean up the committed rows.
select dblink_exec('writer', format('delete from conductor.tasks where queue = %L', :'q')) as d \gset
select dblink_disconnect('writer') as x1 \gset

select * from finish();
rollback;
