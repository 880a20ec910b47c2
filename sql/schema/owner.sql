-- Deploy conductor:schema/owner to pg
--
-- Hands every object of the schema to conductor_owner: a NOLOGIN role that is
-- not a superuser and has no attribute beyond the defaults. The SECURITY
-- DEFINER functions run as their owner, so a hole in one of them reaches no
-- further than the conductor schema itself (v0.1.0 left them owned by whoever
-- deployed, usually a superuser).
--
-- Owns:   role conductor_owner (created when missing; roles are cluster-wide,
--         so revert never drops it)
-- Later changes: every deploy script after this one starts its transaction
-- with `set local role conductor_owner`, so what it creates is born with the
-- right owner and it can do nothing the owner could not. The deploying role
-- must be a superuser or a member of conductor_owner.

begin;

do $$
begin
  if not exists (select from pg_catalog.pg_roles where rolname = 'conductor_owner') then
    create role conductor_owner nologin;
  end if;
end
$$;

comment on role conductor_owner is
  'Owns the conductor schema and its objects; SECURITY DEFINER functions run as it. NOLOGIN, not a superuser.';

-- Tables carry their indexes, triggers, row types and identity sequences along;
-- standalone sequences, composite and enum types, and routines go one by one.
do $$
declare
  v_ddl text;
begin
  for v_ddl in
    select pg_catalog.format('alter table %s owner to conductor_owner', c.oid::regclass)
      from pg_catalog.pg_class c
     where c.relnamespace = 'conductor'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'f')
    union all
    select pg_catalog.format('alter sequence %s owner to conductor_owner', c.oid::regclass)
      from pg_catalog.pg_class c
     where c.relnamespace = 'conductor'::regnamespace and c.relkind = 'S'
       and not exists (select from pg_catalog.pg_depend d
                        where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype in ('a', 'i'))
    union all
    select pg_catalog.format('alter type %s owner to conductor_owner', t.oid::regtype)
      from pg_catalog.pg_type t
     where t.typnamespace = 'conductor'::regnamespace
       and t.typtype in ('e', 'd', 'r', 'c')
       and (t.typtype <> 'c' or (select c.relkind from pg_catalog.pg_class c where c.oid = t.typrelid) = 'c')
    union all
    select pg_catalog.format('alter routine %s owner to conductor_owner', p.oid::regprocedure)
      from pg_catalog.pg_proc p
     where p.pronamespace = 'conductor'::regnamespace
  loop
    execute v_ddl;
  end loop;
end
$$;

alter schema conductor owner to conductor_owner;

commit;
