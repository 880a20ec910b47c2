-- Verify conductor:functions/timeline on pg

begin;

select conductor.enqueue('verify', queue => 'verify-timeline');
select 1 / (count(*) = 2)::int  -- the task and its queued span
  from conductor.run_timeline((select max(id) from conductor.tasks where queue = 'verify-timeline'));
select 1 / pg_catalog.has_function_privilege('conductor_client', 'conductor.run_timeline(bigint, integer)', 'execute')::int;

rollback;
