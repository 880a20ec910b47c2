-- Deploy conductor:schema/attempt_timed_out to pg
--
-- That an attempt failed at its time limit, as a recorded fact (issue 28):
--
--   conductor.attempts.timed_out   true when the attempt failed because it reached
--                                  its deadline (claimed_at + the task's timeout):
--                                  reported so by its worker (fail(timed_out =>
--                                  true)) or found so by reap(); false otherwise
--
-- heartbeat reads it to answer 'timed_out' for such an attempt; the error text
-- ('timed out after N s') is written by the engine alone and read by nobody.
-- Before this change the fact was the error text itself: the upgrade marks the
-- failed attempts whose error is the engine's text for their task's limit, or the
-- text the Node worker wrote (the limit's seconds without %g's exponent).
-- A NOT NULL column with a constant default: no table rewrite.

begin;
set local role conductor_owner;

alter table conductor.attempts add column timed_out boolean not null default false;
comment on column conductor.attempts.timed_out is
  'The attempt failed at its time limit (claimed_at + the task''s timeout): its worker reported '
  'fail(timed_out => true) or reap() found it past the deadline. heartbeat answers such an '
  'attempt ''timed_out''.';

update conductor.attempts a
   set timed_out = true
  from conductor.tasks t
 where t.id = a.task_id
   and a.outcome = 'failed'
   and t.timeout is not null
   and a.error in (conductor._timed_out_error(t.timeout),
                   pg_catalog.format('timed out after %s s',
                                     pg_catalog.trim_scale(extract(epoch from t.timeout))));

commit;
