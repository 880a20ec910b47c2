-- Verify conductor:functions/runs on pg

begin;

select conductor.enqueue('verify', queue => 'verify-runs');
create temporary table verify_claim on commit drop as
  select * from conductor.claim('verify-worker', array['verify-runs']);
select 1 / (conductor.save_step(attempt_id, 'one', '1') = '1')::int from verify_claim;
select 1 / (s.state = 'waiting')::int
  from verify_claim c, conductor.suspend(c.attempt_id, 'approval', 'event', event => 'verify-event') s;
select 1 / (conductor.emit_event('verify-event', '{"ok": true}') = 1)::int;
select 1 / (count(*) = 1)::int from conductor.tasks where queue = 'verify-runs' and status = 'queued';
-- a new event stays pending until reap() has seen every suspend that could have missed it
select 1 / (select e.pending::int from conductor.events e where e.name = 'verify-event');
select 1 / (not pg_catalog.has_function_privilege('conductor_client', 'conductor._wake_event_waiters(text)', 'execute'))::int;

rollback;
