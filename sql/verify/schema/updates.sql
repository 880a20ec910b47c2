-- Verify conductor:schema/updates on pg

begin;

select id::bigint, task_id::bigint, name::text, ordinal::integer, payload::jsonb, sent_at::timestamptz,
       reply::jsonb, replied_at::timestamptz
  from conductor.updates where false;
select 1 / (not pg_catalog.has_table_privilege('conductor_client', 'conductor.updates', 'insert'))::int;

rollback;
