-- Deploy conductor:schema/updates to pg
--
-- Updates with a reply (issue 31): a client sends a named message to a run
-- (send_update), the run's handler, waiting for it (wait_update), is woken with
-- it, handles it and replies (reply_update); the sender reads the reply
-- (update_reply).
--
--   conductor.updates   one row per update sent: the task, the name, the n-th of
--                       that name sent to the task (ordinal), the payload, and the
--                       reply once given (the first reply wins). Its delivery is an
--                       event named conductor._update_event(id) (functions/updates),
--                       so it wakes its waiter through the events' machinery.
--                       Deleted with the task (prune's _delete_tasks; no foreign key:
--                       its triggers would run at every update of a task, the hot path).

begin;
set local role conductor_owner;

create table conductor.updates (
  id         bigint generated always as identity primary key,
  task_id    bigint not null,
  name       text not null,
  ordinal    integer not null,
  payload    jsonb,
  sent_at    timestamptz not null,
  reply      jsonb,
  replied_at timestamptz,
  constraint updates_nth_of_name unique (task_id, name, ordinal)
);

comment on table conductor.updates is
  'Updates sent to runs (conductor.send_update): the n-th update of a name to a task (ordinal), its payload and, '
  'once the run replied (conductor.reply_update), the reply. Deleted with the task.';

grant select on conductor.updates to conductor_client, conductor_worker, conductor_admin;

commit;
