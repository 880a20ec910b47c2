-- Verify conductor:schema/schedule_audit on pg
--
-- The columns exist with their types, and a row that does not say who declared it is
-- the operator's.

begin;

select declared_by::text, changed_by::text, last_error::text, last_error_at::timestamptz
  from conductor.schedules
 where false;
select 1 / (count(*) = 1)::int
  from pg_catalog.pg_attrdef d
  join pg_catalog.pg_attribute a on a.attrelid = d.adrelid and a.attnum = d.adnum
 where d.adrelid = 'conductor.schedules'::regclass and a.attname = 'declared_by'
   and pg_catalog.pg_get_expr(d.adbin, d.adrelid) = '''admin''::text';

rollback;
