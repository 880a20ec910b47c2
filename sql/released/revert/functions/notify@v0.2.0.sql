-- Revert conductor:functions/notify from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/notify@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
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

-- 0.2.0's wake-up protocol goes with the tables of schema/wakeups
drop function conductor.unwatch(bigint);
drop function conductor.watch(bigint);
drop function conductor.wake(text);
drop function conductor.sleep(text, text[]);
-- 0.2.0's answers whether it notified; v0.1.0's answered nothing
drop function conductor._notify_queue(text);

create or replace function conductor._notify_queue(queue text) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.pg_notify('conductor', _notify_queue.queue)
$$;

create or replace function conductor._notify_done(task_ids bigint[]) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
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

create or replace function conductor._notify_inserted() returns trigger
  language plpgsql
  set search_path = pg_catalog, pg_temp
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

create or replace trigger tasks_notify_inserted
  after insert on conductor.tasks
  referencing new table as inserted_tasks
  for each statement
  execute function conductor._notify_inserted();

revoke execute on function conductor._notify_queue(text) from public;
revoke execute on function conductor._notify_done(bigint[]) from public;
revoke execute on function conductor._notify_inserted() from public;

commit;
