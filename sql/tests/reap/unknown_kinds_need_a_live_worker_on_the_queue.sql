-- A queue no live worker serves has nobody to say its kinds are unknown: its tasks wait,
-- however long, whatever their kind (they show in stats().unrunnable). A worker not seen
-- within unknown_kind_after does not count as serving the queue.
begin;
select plan(2);
\ir ../helpers.psql
delete from conductor.workers;
update conductor.maintenance set unknown_kinds_swept_at = null;  -- whatever a committed test left
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('elsewhere', queues => '{sweep-other}', kinds => '{A}') as r1 \gset
select conductor.register_worker('gone-quiet', queues => '{sweep-empty}', kinds => '{A}') as r2 \gset
select conductor.enqueue('B', '{}', 'sweep-empty') as tb \gset

set local conductor.fake_now = '2030-01-01 01:00:00+00';
select count(*) from conductor.heartbeat('elsewhere', '{}') \gset
select conductor.reap('1 day') as n \gset
select is((select status::text from conductor.tasks where id = :tb), 'queued',
  'A task on a queue whose only worker went quiet an hour ago waits.');
select is((select count(*) from conductor.workers where id = 'gone-quiet'), 1::bigint,
  '(The quiet worker''s row is still there: it is the liveness, not the row, that counts.)');

select * from finish();
rollback;
