-- Verify conductor:schema/expired_status on pg

begin;

select 'expired'::conductor.task_status;
select 1 / (pg_catalog.array_position(pg_catalog.enum_range(null::conductor.task_status), 'expired')
            = pg_catalog.array_position(pg_catalog.enum_range(null::conductor.task_status), 'timed_out') + 1)::int;

rollback;
