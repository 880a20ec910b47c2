-- Deploy conductor:schema/expired_status to pg
--
-- A terminal status of its own for a task that was not started in time
-- (issue 30, expiry before start):
--
--   conductor.task_status 'expired'   after 'timed_out': a queued task whose
--                                     deadline to start (tasks.expires_at,
--                                     schema/expiry) passed before any worker
--                                     claimed it; ended by reap(), never
--                                     started by claim
--
-- Alone in its change: PostgreSQL refuses a value added by ALTER TYPE ... ADD
-- VALUE in the transaction that added it, and every change (sqitch's psql,
-- pyconductor.migrate) runs in a transaction of its own, so the changes after
-- this one (the partial index, the trigger's WHEN and the functions that name
-- 'expired') see it committed. IF NOT EXISTS: the revert cannot drop an enum
-- value (PostgreSQL has no DROP VALUE), so a deploy after a revert finds it.

begin;
set local role conductor_owner;

alter type conductor.task_status add value if not exists 'expired' after 'timed_out';

commit;
