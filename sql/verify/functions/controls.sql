-- Verify conductor:functions/controls on pg

begin;

-- pause: claimed by nobody, shown by stats(); resume: claimable again
select conductor.enqueue('verify', queue => 'verify-controls');
select 1 / conductor.pause_queue('verify-controls')::int;
select 1 / (not conductor.pause_queue('verify-controls'))::int;
select 1 / (count(*) = 0)::int from conductor.claim('verify-worker', array['verify-controls'], 10);
select 1 / (count(*) = 1)::int from conductor.stats() s where s.queue = 'verify-controls' and s.paused;
select 1 / conductor.resume_queue('verify-controls')::int;
select 1 / (not conductor.resume_queue('verify-controls'))::int;

-- a rate limit of one start (one a second, burst 1, and this transaction's clock
-- stands still): one task of two; the limit is the caller's
select conductor.enqueue('verify', queue => 'verify-controls');
select conductor.set_rate_limit(queue => 'verify-controls', per_second => 1, burst => 1);
select 1 / (count(*) = 1)::int from conductor.rate_limits where name = 'verify-controls' and owner = conductor._caller();
select 1 / (count(*) = 1)::int from conductor.claim('verify-worker', array['verify-controls'], 10);
select 1 / (count(*) = 0)::int from conductor.claim('verify-worker', array['verify-controls'], 10);
select conductor.set_rate_limit(queue => 'verify-controls');
select 1 / (count(*) = 0)::int from conductor.rate_limits where name = 'verify-controls';

do $$
begin
  perform conductor.set_rate_limit(queue => 'verify-controls', kind => 'verify', per_second => 1);
  raise exception 'set_rate_limit accepted both a queue and a kind';
exception when sqlstate 'QC106' then
  null;
end
$$;

select 1 / pg_catalog.has_function_privilege('conductor_admin', 'conductor.pause_queue(text)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_worker', 'conductor.pause_queue(text)', 'execute'))::int;
select 1 / pg_catalog.has_function_privilege('conductor_admin', 'conductor.resume_queue(text)', 'execute')::int;
select 1 / pg_catalog.has_function_privilege('conductor_worker',
  'conductor.set_rate_limit(text, text, double precision, double precision, boolean)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client',
  'conductor.set_rate_limit(text, text, double precision, double precision, boolean)', 'execute'))::int;

rollback;
