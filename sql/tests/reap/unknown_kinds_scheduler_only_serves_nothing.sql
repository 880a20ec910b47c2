-- A process registered without the 'worker' role (a scheduler only, pyconductor worker
-- --no-workers) claims nothing: its NULL kinds do not make every kind served, so it
-- neither hides unrunnable tasks nor keeps a typo alive; a row heartbeat re-created
-- (no roles) still counts, since that process claims.
begin;
select plan(4);
\ir ../helpers.psql
delete from conductor.workers;
update conductor.maintenance set unknown_kinds_swept_at = null;  -- whatever a committed test left
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('sched-only', roles => '{scheduler}') as r1 \gset
select conductor.register_worker('a-only', queues => '{sweep-sched}', kinds => '{A}') as r2 \gset
select conductor.enqueue('typo', '{}', 'sweep-sched') as t1 \gset

select is((select u.tasks from conductor.unrunnable() u where u.queue = 'sweep-sched' and u.kind = 'typo'), 1::bigint,
  'A scheduler-only process does not make a kind runnable.');

set local conductor.fake_now = '2030-01-01 01:00:00+00';
select count(*) from unnest(array['sched-only', 'a-only']) w, lateral conductor.heartbeat(w, '{}') \gset
select conductor.reap() as n \gset
select is((select status::text from conductor.tasks where id = :t1), 'dead',
  'Nor does it keep a typo alive: the kind is dead-lettered past unknown_kind_after.');

select conductor.enqueue('typo2', '{}', 'sweep-sched') as t2 \gset
select count(*) from conductor.heartbeat('re-created', '{}') \gset
select is((select roles from conductor.workers where id = 're-created'), '{}'::text[],
  'A worker heartbeat re-created has no roles.');
select is((select count(*) from conductor.unrunnable() u where u.queue = 'sweep-sched'), 0::bigint,
  'It counts as serving every queue and kind (it claims): nothing is unrunnable.');

select * from finish();
rollback;
