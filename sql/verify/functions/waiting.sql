-- Verify conductor:functions/waiting on pg

begin;

-- a paused queue's task says so, and the queue counts it under queue_paused
select conductor.enqueue('verify', queue => 'verify-waiting') as id \gset
select conductor.pause_queue('verify-waiting');
select 1 / (count(*) = 1)::int from conductor.why_waiting(array[:id]::bigint[]) w where w.reason = 'queue_paused';
select 1 / (count(*) = 1)::int from conductor.waiting_reasons('verify-waiting') r
 where r.reason = 'queue_paused' and r.tasks = 1;
select 1 / pg_catalog.has_function_privilege('conductor_client', 'conductor.why_waiting(bigint[])', 'execute')::int;
select 1 / pg_catalog.has_function_privilege('conductor_client', 'conductor.waiting_reasons(text)', 'execute')::int;

rollback;
