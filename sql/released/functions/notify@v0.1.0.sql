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
--
-- A second channel, 'conductor_done', tells clients waiting for results that
-- tasks finished: one notification per finishing statement, its payload the
-- finished ids separated by commas, or '*' (look again) when they would not
-- fit in a notification.

begin;

create function conductor._notify_queue(queue text) returns void
  language sql volatile
  set search_path = ''
as $$
  select pg_catalog.pg_notify('conductor', _notify_queue.queue)
$$;

create function conductor._notify_done(task_ids bigint[]) returns void
  language plpgsql volatile
  set search_path = ''
as $$
declare
  v_payload text;
begin
  if pg_catalog.cardinality(_notify_done.task_ids) > 0 then
    v_payload := pg_catalog.array_to_string(_notify_done.task_ids, ',');
    perform pg_catalog.pg_notify('conductor_done',
      case when pg_catalog.length(v_payload) > 7900 then '*' else v_payload end);
  end if;
end
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
revoke execute on function conductor._notify_done(bigint[]) from public;
revoke execute on function conductor._notify_inserted() from public;

commit;
