-- Verify conductor:functions/stats on pg

begin;

select conductor.enqueue('verify', queue => 'verify-stats');
select 1 / (count(*) = 1)::int from conductor.stats() s where s.queue = 'verify-stats' and s.ready = 1 and not s.paused
   and s.expired_15m = 0 and s.max_running is null;
select 1 / (pg_catalog.has_function_privilege('conductor_client', 'conductor.stats()', 'execute'))::int;
select 1 / (not pg_catalog.has_function_privilege('public', 'conductor.stats()', 'execute'))::int;
select 1 / pg_catalog.has_function_privilege('conductor_client', 'conductor.unrunnable()', 'execute')::int;
select 1 / (count(*) >= 0)::int from conductor.unrunnable();
select 1 / (count(*) = 1)::int from pg_catalog.pg_indexes
 where schemaname = 'conductor' and indexname = 'tasks_finished';
-- a run_at v0.1.0 could store does not make stats() raise
update conductor.tasks set run_at = '-infinity' where queue = 'verify-stats';
select 1 / (count(*) = 1)::int from conductor.stats() s
 where s.queue = 'verify-stats' and s.ready = 1 and s.oldest_ready_age is not null;

rollback;
