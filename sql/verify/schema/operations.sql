-- Verify conductor:schema/operations on pg

begin;

select queue::text, paused_at::timestamptz, paused_by::text from conductor.paused_queues where false;
select scope::text, name::text, per_second::float8, burst::float8, tokens::float8, refilled_at::timestamptz
  from conductor.rate_limits where false;
select retain_succeeded::interval, retain_failed::interval, retain_events::interval, max_log_bytes::integer
  from conductor.settings;
select retain_succeeded::interval, retain_failed::interval from conductor.kinds where false;
select attempt_id::bigint, lines::jsonb, dropped::integer from conductor.attempt_logs where false;
select topic::text, pid::integer, since::timestamptz from conductor.subscriptions where false;
select manual::boolean from conductor.schedule_fires where false;

rollback;
