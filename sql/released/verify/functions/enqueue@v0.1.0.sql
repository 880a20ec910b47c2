-- Verify conductor:functions/enqueue on pg

begin;

select 1 / (conductor.enqueue('verify', '{"n": 1}') > 0)::int;
select 1 / (count(*) = 2)::int
  from conductor.enqueue_many('[{"kind": "verify"}, {"kind": "verify", "queue": "other"}]');
select 1 / pg_catalog.has_function_privilege('conductor_client',
  'conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval)',
  'execute')::int;

rollback;
