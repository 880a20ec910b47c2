-- Verify conductor:schema/schedule_owners on pg
--
-- The column exists as text, with no default: a row from before it has no owner.

begin;

select owner::text from conductor.schedules where false;
select 1 / (count(*) = 1)::int
  from pg_catalog.pg_attribute a
 where a.attrelid = 'conductor.schedules'::regclass and a.attname = 'owner' and not a.attnotnull
   and not a.atthasdef and a.atttypid = 'text'::regtype;

rollback;
