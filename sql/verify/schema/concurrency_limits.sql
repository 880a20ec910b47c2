-- Verify conductor:schema/concurrency_limits on pg

begin;

select concurrency_limit::integer from conductor.tasks where false;
select concurrency_limit::integer from conductor.kinds where false;
select concurrency_limit::integer from conductor.schedules where false;
select (null::conductor._task_spec).concurrency_limit::integer;
select 1 / (pg_catalog.to_regclass('conductor.tasks_ready_by_key') is not null)::int;

rollback;
