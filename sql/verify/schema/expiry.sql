-- Verify conductor:schema/expiry on pg

begin;

select expires_in::interval, expires_at::timestamptz from conductor.tasks where false;
select expires_in::interval from conductor.kinds where false;
select (null::conductor._task_spec).expires_in::interval;
select 'conductor.tasks_expiring'::regclass;

rollback;
