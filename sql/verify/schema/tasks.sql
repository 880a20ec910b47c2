-- Verify conductor:schema/tasks on pg

begin;

select id, queue, kind, payload, priority, run_at, status, attempt, max_attempts,
       backoff_base, backoff_factor, backoff_max, recoveries, max_recoveries,
       dedupe_key, concurrency_key, parent_id, root_id, attempt_id, claimed_by,
       lease_expires_at, wait_for, wait_event, wait_until, wait_step, result, error,
       enqueued_at, started_at, finished_at
  from conductor.tasks
 where false;

rollback;
