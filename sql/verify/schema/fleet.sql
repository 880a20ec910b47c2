-- Verify conductor:schema/fleet on pg

begin;

select kinds::text[] from conductor.workers where false;
select queue::text, priority::integer, concurrency_key::text, timeout::interval from conductor.kinds where false;
select timeout::interval from conductor.tasks where false;
select (null::conductor._task_spec).timeout::interval, (null::conductor.claimed_task).timeout::interval;
select 1 / (count(*) = 1)::int from conductor.settings where unknown_kind_after = interval '5 minutes';
select 1 / (count(*) = 1)::int from conductor.maintenance;
select kind::text, last_served_at::timestamptz from conductor.served_kinds where false;

rollback;
