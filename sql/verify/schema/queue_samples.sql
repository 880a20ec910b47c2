-- Verify conductor:schema/queue_samples on pg

begin;

select minute::timestamptz, sampled_at::timestamptz from conductor.sample_minutes where false;
select queue::text, minute::timestamptz, finished::integer, failed::integer, depth::integer, oldest_age::interval
  from conductor.queue_samples where false;
select 1 / (count(*) = 1)::int from conductor.settings where retain_samples = interval '2 days';
select 1 / pg_catalog.has_table_privilege('conductor_client', 'conductor.queue_samples', 'select')::int;
select 1 / (not pg_catalog.has_table_privilege('conductor_worker', 'conductor.queue_samples', 'insert'))::int;

rollback;
