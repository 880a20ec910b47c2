-- Verify conductor:schema/coordination on pg

begin;

select name::text, holder::text, login::text, since::timestamptz, renewed_at::timestamptz,
       expires_at::timestamptz, session_pid::integer, pid::integer, application_name::text
  from conductor.leader_leases where false;
select slot::integer from conductor.concurrency_slots where false;
select key::uuid, name::text, created_at::timestamptz from conductor.exclusive_locks where false;
-- every slot a key can map to exists
select 1 / (count(*) = 65536)::int from conductor.concurrency_slots;
-- readable by the application roles, and nothing more (no row lock without UPDATE)
select 1 / (pg_catalog.has_table_privilege(r.rolname, t.name, 'select')
            and not pg_catalog.has_table_privilege(r.rolname, t.name, 'insert, update, delete, truncate, references, trigger'))::int
  from (values ('conductor_client'), ('conductor_worker'), ('conductor_admin')) r(rolname),
       (values ('conductor.leader_leases'), ('conductor.concurrency_slots'), ('conductor.exclusive_locks')) t(name);

rollback;
