-- Revert conductor:schema/owner from pg
--
-- Gives the schema and its objects back to the role that reverts (as v0.1.0
-- left them with the role that deployed). The role conductor_owner stays.

begin;

do $$
declare
  v_ddl text;
begin
  for v_ddl in
    select pg_catalog.format('alter table %s owner to %I', c.oid::regclass, current_user)
      from pg_catalog.pg_class c
     where c.relnamespace = 'conductor'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'f')
    union all
    select pg_catalog.format('alter sequence %s owner to %I', c.oid::regclass, current_user)
      from pg_catalog.pg_class c
     where c.relnamespace = 'conductor'::regnamespace and c.relkind = 'S'
       and not exists (select from pg_catalog.pg_depend d
                        where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype in ('a', 'i'))
    union all
    select pg_catalog.format('alter type %s owner to %I', t.oid::regtype, current_user)
      from pg_catalog.pg_type t
     where t.typnamespace = 'conductor'::regnamespace
       and t.typtype in ('e', 'd', 'r', 'c')
       and (t.typtype <> 'c' or (select c.relkind from pg_catalog.pg_class c where c.oid = t.typrelid) = 'c')
    union all
    select pg_catalog.format('alter routine %s owner to %I', p.oid::regprocedure, current_user)
      from pg_catalog.pg_proc p
     where p.pronamespace = 'conductor'::regnamespace
  loop
    execute v_ddl;
  end loop;
end
$$;

alter schema conductor owner to current_user;

commit;
