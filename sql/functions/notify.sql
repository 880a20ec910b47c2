-- Deploy conductor:functions/notify to pg
--
-- Wakes idle workers. An INSERT statement on conductor.tasks sends one
-- notification per queue that received a task due now, on the channel
-- 'conductor', its payload the queue's name (never the task's payload). It is a
-- statement-level trigger, so a batch of 10,000 rows costs one notification per
-- queue, and PostgreSQL folds identical notifications within a transaction.
-- Functions that put an existing task back in the queue (release, reap, fail
-- with a retry due now, retry) call conductor._notify_queue themselves.
--
-- Notifications are a latency hint only: workers also poll, because a pooler
-- in transaction mode drops them.

begin;

create function conductor._notify_queue(queue text) returns void
  language sql volatile
  set search_path = ''
as $$
  select pg_catalog.pg_notify('conductor', _notify_queue.queue)
$$;

create function conductor._notify_inserted() returns trigger
  language plpgsql
  set search_path = ''
as $$
declare
  v_now timestamptz := conductor.now();
  v_queue text;
begin
  for v_queue in select distinct n.queue from inserted_tasks n where n.run_at <= v_now loop
    perform pg_catalog.pg_notify('conductor', v_queue);
  end loop;
  return null;
end
$$;

create trigger tasks_notify_inserted
  after insert on conductor.tasks
  referencing new table as inserted_tasks
  for each statement
  execute function conductor._notify_inserted();

revoke execute on function conductor._notify_queue(text) from public;
revoke execute on function conductor._notify_inserted() from public;

commit;
