-- Verify conductor:schema/attempts on pg

begin;

select id, task_id, attempt, worker_id, host, pid, claimed_at, finished_at,
       outcome, error, traceback
  from conductor.attempts
 where false;

rollback;
