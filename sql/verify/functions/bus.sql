-- Verify conductor:functions/bus on pg

begin;

-- nobody subscribes to this topic: nothing is sent
select 1 / (not conductor.publish('verify-bus', '{"x": 1}'))::int;
-- a subscription of this session makes publish send (at commit; rolled back here)
select conductor.subscribe(array['verify-bus']);
select 1 / conductor.publish('verify-bus', '{"x": 1}')::int;
select conductor.unsubscribe(array['verify-bus']);
select 1 / (not conductor.publish('verify-bus', '{"x": 1}'))::int;
select conductor.exclusive('verify-bus');
select conductor.exclusive('verify-bus');  -- again in the same transaction: at once
-- a row lock of conductor.exclusive_locks, no advisory lock
select 1 / (count(*) = 0)::int from pg_catalog.pg_locks l
 where l.pid = pg_catalog.pg_backend_pid() and l.locktype = 'advisory';
select 1 / (not has_function_privilege('conductor_worker', 'conductor._forget_exclusive_locks(interval, integer)', 'execute'))::int;
select 1 / has_function_privilege('conductor_client', 'conductor.publish(text, jsonb, text)', 'execute')::int;
select 1 / has_function_privilege('conductor_client', 'conductor.exclusive(text)', 'execute')::int;
select 1 / (not has_function_privilege('conductor_client', 'conductor._publish(text, jsonb, text)', 'execute'))::int;

rollback;
