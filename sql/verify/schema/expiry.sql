-- Verify conductor:schema/expiry on pg

begin;

select expires_in::interval, expires_at::timestamptz from conductor.tasks where false;
select expires_in::interval from conductor.kinds where false;
select (null::conductor._task_spec).expires_in::interval;
select task_id::bigint, expires_at::timestamptz from conductor.task_deadlines where false;
select 1 / (not pg_catalog.has_table_privilege('conductor_worker', 'conductor.task_deadlines', 'insert'))::int;

rollback;
