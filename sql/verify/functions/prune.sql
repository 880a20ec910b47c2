-- Verify conductor:functions/prune on pg

begin;

update conductor.settings set fake_clock = true;  -- rolled back with the rest
set local conductor.fake_now = '2000-01-01 00:00:00+00';
select conductor.enqueue('verify', queue => 'verify-prune');
select conductor.complete(c.attempt_id, '{}')
  from conductor.claim('verify-prune-w', array['verify-prune'], 1, interval '1 minute') c;
set local conductor.fake_now = '2000-01-09 00:00:00+00';
select 1 / (conductor.prune(interval '7 days') >= 1)::int;
select 1 / (count(*) = 0)::int from conductor.tasks where queue = 'verify-prune';
select conductor.emit_event('verify-prune-event');
set local conductor.fake_now = '2000-01-17 00:00:00+00';
-- a pending event (the reaper has not confirmed it) stays; once confirmed it goes
select 1 / (conductor.prune(interval '7 days') = 0)::int;
update conductor.events set pending = false where name = 'verify-prune-event';
select 1 / (conductor.prune(interval '7 days') >= 1)::int;
select 1 / (count(*) = 0)::int from conductor.events where name = 'verify-prune-event';
select 1 / (pg_catalog.has_function_privilege('conductor_admin', 'conductor.prune(interval, boolean, integer)', 'execute'))::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client', 'conductor.prune(interval, boolean, integer)', 'execute'))::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_worker', 'conductor.prune(interval, boolean, integer)', 'execute'))::int;

rollback;
