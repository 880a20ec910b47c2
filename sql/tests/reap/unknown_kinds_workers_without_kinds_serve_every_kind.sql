-- A worker that names no kinds (workers.kinds NULL, as v0.1.0 workers register) serves
-- every kind: on the queue, nothing there is unknown; on another queue, no kind it could
-- run is called unknown anywhere (the sweep asks whether a kind is served at all).
begin;
select plan(2);
\ir ../helpers.psql
delete from conductor.workers;
update conductor.maintenance set unknown_kinds_swept_at = null;  -- whatever a committed test left
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('all-kinds', queues => '{sweep-all}') as r1 \gset
select conductor.register_worker('a-only', queues => '{sweep-mixed}', kinds => '{A}') as r2 \gset
select conductor.register_worker('all-elsewhere', queues => '{sweep-far}') as r3 \gset
select conductor.enqueue('typo', '{}', 'sweep-all') as t1 \gset
select conductor.enqueue('B', '{}', 'sweep-mixed') as t2 \gset

set local conductor.fake_now = '2030-01-01 01:00:00+00';
select count(*) from unnest(array['all-kinds', 'a-only', 'all-elsewhere']) w,
  lateral conductor.heartbeat(w, '{}') \gset
select conductor.reap() as n \gset
select is((select status::text from conductor.tasks where id = :t1), 'queued',
  'On a queue served by a worker without kinds, no task is of an unknown kind.');
select is((select status::text from conductor.tasks where id = :t2), 'queued',
  'A kind a live worker without kinds could run on another queue is not unknown either.');

select * from finish();
rollback;
