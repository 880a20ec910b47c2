-- Verify conductor:schema/owner on pg
--
-- conductor_owner exists, cannot log in, is no superuser, and owns the schema
-- and every object in it.

begin;

select 1 / (not r.rolcanlogin and not r.rolsuper and not r.rolbypassrls and not r.rolcreaterole)::int
  from pg_catalog.pg_roles r where r.rolname = 'conductor_owner';
select 1 / (n.nspowner = 'conductor_owner'::regrole)::int
  from pg_catalog.pg_namespace n where n.nspname = 'conductor';
select 1 / (count(*) = 0)::int
  from pg_catalog.pg_class c
 where c.relnamespace = 'conductor'::regnamespace and c.relowner <> 'conductor_owner'::regrole;
select 1 / (count(*) = 0)::int
  from pg_catalog.pg_proc p
 where p.pronamespace = 'conductor'::regnamespace and p.proowner <> 'conductor_owner'::regrole;
select 1 / (count(*) = 0)::int
  from pg_catalog.pg_type t
 where t.typnamespace = 'conductor'::regnamespace and t.typowner <> 'conductor_owner'::regrole;

rollback;
