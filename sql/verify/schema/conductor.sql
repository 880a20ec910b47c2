-- Verify conductor:schema/conductor on pg

begin;

select pg_catalog.has_schema_privilege('conductor', 'usage');
select 1 / (count(*) = 8)::int
  from pg_catalog.pg_enum e
  join pg_catalog.pg_type t on t.oid = e.enumtypid
 where t.typname = 'task_status'
   and t.typnamespace = 'conductor'::regnamespace;

rollback;
