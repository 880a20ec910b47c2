-- Verify conductor:schema/rate_keys on pg

begin;

select rate_key::text from conductor.tasks where false;
select per_key::boolean from conductor.rate_limits where false;
select (null::conductor._task_spec).rate_key::text;
select scope::text, name::text, key::text, tokens::double precision, refilled_at::timestamptz
  from conductor.rate_key_buckets where false;
select 1 / (not pg_catalog.has_table_privilege('conductor_worker', 'conductor.rate_key_buckets', 'insert'))::int;

rollback;
