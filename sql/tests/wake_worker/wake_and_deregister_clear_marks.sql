-- A worker's sleep marks (conductor.sleepers) go when it is busy or gone, so that enqueues
-- stop notifying on its account: wake() removes them (idempotent, also for a worker with no
-- marks or no row) and leaves the worker registered; deregister_worker() removes them with
-- the workers row (on delete cascade); reap() forgetting a stale worker removes them the same
-- way, and keeps the marks of a worker it keeps.
-- Runs in this transaction (rolled back). The clock is set in the past so that reap() finds
-- nothing else to do (no lease or deadline expired before 2000).
begin;
select plan(9);
\ir ../helpers.psql

select 'wake-marks-' || pg_backend_pid() as q \gset
select 'w-wake-marks-' || pg_backend_pid() as w \gset

set local conductor.fake_now = '2000-01-01 00:00:00+00';
select conductor.sleep(:'w' || '-1', array[:'q' || '-a', :'q' || '-b']) as s1 \gset
select conductor.sleep(:'w' || '-2', array[:'q' || '-a']) as s2 \gset
select conductor.wake(:'w' || '-1') as k1 \gset
select is_empty(format('select 1 from conductor.sleepers where worker_id = %L', :'w' || '-1'),
  'wake removes every mark of the worker.');
select set_eq(format('select worker_id, queue from conductor.sleepers where worker_id like %L', :'w' || '%'),
  format('values (%L::text, %L::text)', :'w' || '-2', :'q' || '-a'),
  'Another worker''s mark on the same queue stays.');
select isnt_empty(format('select 1 from conductor.workers where id = %L', :'w' || '-1'),
  'wake leaves the worker registered.');
select lives_ok(format('select conductor.wake(%L)', :'w' || '-1'),
  'wake again (no marks left) is fine: idempotent.');
select lives_ok(format('select conductor.wake(%L)', :'w' || '-nobody'),
  'wake of a worker_id with no workers row is fine.');

select conductor.sleep(:'w' || '-3', array[:'q' || '-a', :'q' || '-c']) as s3 \gset
select is(conductor.deregister_worker(:'w' || '-3'), true, 'The sleeping worker deregisters.');
select is_empty(format('select 1 from conductor.sleepers where worker_id = %L', :'w' || '-3'),
  'deregister_worker removes its marks with its row.');

-- worker -4 slept at 00:00 and is stale by 00:16; worker -5 slept at 00:10 and is kept
select conductor.sleep(:'w' || '-4', array[:'q' || '-a']) as s4 \gset
set local conductor.fake_now = '2000-01-01 00:10:00+00';
select conductor.sleep(:'w' || '-5', array[:'q' || '-b']) as s5 \gset
set local conductor.fake_now = '2000-01-01 00:16:00+00';
select conductor.reap() as n \gset
select is_empty(format('select 1 from conductor.sleepers where worker_id in (%L, %L, %L)', :'w' || '-1', :'w' || '-2', :'w' || '-4'),
  'reap forgetting stale workers removes their marks.');
select set_eq(format('select worker_id, queue from conductor.sleepers where worker_id like %L', :'w' || '%'),
  format('values (%L::text, %L::text)', :'w' || '-5', :'q' || '-b'),
  'The marks of a worker reap keeps stay.');

select * from finish();
rollback;
