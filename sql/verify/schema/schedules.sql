-- Verify conductor:schema/schedules on pg

begin;

select name, cron, timezone, kind, payload, queue, priority, max_attempts, dedupe_key,
       concurrency_key, catch_up, catch_up_limit, enabled, next_due_at, last_due_at,
       last_task_id, created_at, updated_at
  from conductor.schedules where false;
select schedule_name, due_at, task_id, fired_at from conductor.schedule_fires where false;

rollback;
