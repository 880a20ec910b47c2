-- Verify conductor:functions/reap on pg

begin;

select conductor.enqueue('verify', queue => 'verify-reap');
select count(*) from conductor.claim('verify-worker', array['verify-reap'], 1, interval '1 second');
update conductor.settings set fake_clock = true;  -- rolled back with the rest
set local conductor.fake_now = '2999-01-01 00:00:00+00';
select 1 / (conductor.reap() >= 1)::int;
select 1 / (count(*) = 1)::int
  from conductor.tasks where queue = 'verify-reap' and status = 'queued' and recoveries = 1;
select 1 / (conductor.next_due(array['verify-reap']) is null)::int;
select 1 / pg_catalog.has_function_privilege('conductor_worker', 'conductor.next_due(text[], text[])', 'execute')::int;
select 1 / pg_catalog.has_function_privilege('conductor_worker', 'conductor.reap_report(interval)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client', 'conductor.reap_report(interval)', 'execute'))::int;

rollback;
