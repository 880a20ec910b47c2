-- Deploy conductor:schema/traceparent to pg
--
-- The caller's trace context, stored with the task (issue 27), so a worker in
-- any language continues the trace of the request that enqueued it:
--
--   conductor.tasks.traceparent         a W3C Trace Context traceparent
--                                       (00-<32 hex trace id>-<16 hex parent
--                                       span id>-<2 hex flags>), or NULL: the
--                                       enqueuer traced nothing
--   conductor._task_spec.traceparent    the same, in a task to enqueue
--   conductor.claimed_task.traceparent  what claim answers, so the worker opens
--                                       its span in that trace
--
-- No index, no check constraint (enqueue validates through _spec_problem, one
-- rule in one place): a NULL costs a task's row one bit of its null bitmap and
-- nothing else. Written once by enqueue, never updated.

begin;
set local role conductor_owner;

alter table conductor.tasks add column traceparent text;
comment on column conductor.tasks.traceparent is
  'The W3C traceparent of the context that enqueued the task (NULL: none); claim returns it, '
  'so a worker''s span for each attempt continues that trace.';

alter type conductor._task_spec add attribute traceparent text;
alter type conductor.claimed_task add attribute traceparent text;

commit;
