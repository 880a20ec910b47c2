-- Revert conductor:functions/notify from pg: back to its v0.2.0 bodies
--
-- Wake-ups: who waits, and telling only them. A pg_notify takes a
-- database-wide lock at commit and holds it through the WAL flush, so all
-- notifying commits of the database run one at a time (PostgreSQL's
-- PreCommit_Notify). The engine therefore notifies only a waiter that
-- recorded itself (schema/wakeups); under load nobody waits and no commit
-- takes the lock.
--
--   Channel 'conductor', payload a queue name: work may be ready in that queue.
--     conductor.sleep(worker_id, queues) -> boolean   a worker that found nothing
--         to claim marks itself (conductor.sleepers) before it waits
--     conductor.wake(worker_id)                       it is busy again: unmark
--     conductor._notify_queue(queue)                  enqueue (enqueue and
--         _enqueue, the only statements that insert tasks) and every requeue (fail with a retry, release, reap, retry, a durable
--         run's wake-up) call it; it notifies only when a sleeper marks the
--         queue or '*'
--   Channel 'conductor_done', payload the finished ids joined by ',' (or '*'
--   when they would not fit in 8000 bytes): tasks a client waits on finished.
--     conductor.watch(task_id) -> the task, as get_task   record the session's
--         interest, then read the task
--     conductor.unwatch(task_id)                      give it up
--     conductor._notify_done(task_ids)                every completion (complete,
--         complete_many, fail, cancel, reap) calls it; it notifies only the
--         ids a waiter named, and removes those waiters
--   Bus topic 'tasks' (functions/bus, channel 'conductor_bus'): both also
--   publish, only while a session subscribes to 'tasks' or '*' (one probe of
--   conductor.subscriptions' key, in the statement that reads the waiters):
--     _notify_queue: {"event": "queued", "queue": q}
--     _notify_done:  {"event": "finished", "ids": [...]} (every finished id)
--
-- The sleeper protocol (the SQL contract; docs/protocol.md walks a worker
-- through it). A worker LISTENs on 'conductor' for as long as it runs. When a
-- claim comes back short it calls sleep() in a transaction of its own, then
-- claims once more (the re-check), and only if that finds nothing waits:
--   sleep() true   no enqueue that could have missed the mark is in flight:
--                  wait for a notification (or a due time, or the poll)
--   sleep() false  one is: wait a few milliseconds, then sleep() and claim again
-- When a claim comes back full it calls wake(). Notifications are a latency
-- hint: workers poll too (a pooler in transaction mode drops them).
--
-- The race it closes, and how. An enqueue checks for sleepers in its own
-- transaction, which may commit much later (an application's request); a
-- worker that marks itself after that check and claims before that commit
-- would sleep past the task. So every enqueueing transaction holds, until it
-- commits, a shared transaction advisory lock on its queue (and one on 'any
-- queue'), taken before it reads conductor.sleepers; sleep() takes the same
-- key exclusively with pg_try_advisory_xact_lock, in the transaction that
-- writes the mark:
--   - the try-lock fails: an enqueue that may have read the sleepers before
--     the mark is still in flight; the worker looks again shortly (false);
--   - it succeeds: every enqueue that read before is committed, so the
--     re-check claim sees its task; an enqueue that locks after blocks until
--     sleep() commits, and its read (a statement of its own, so a fresh
--     snapshot at READ COMMITTED) sees the mark and notifies.
-- sleep() never waits for a lock, so an idle worker never delays an enqueue by
-- more than its own short transaction. An enqueue at REPEATABLE READ or
-- SERIALIZABLE reads an older snapshot, so it always notifies.
--
-- The same for results. A completion updates the task row, then (a later
-- statement, a fresh snapshot) deletes the waiters of the finished ids and
-- notifies if there were any. watch() writes its row and then reads the task
-- FOR SHARE in one transaction: a completion in flight (row updated, not yet
-- committed) makes the read wait for its commit and see the end; a completion
-- that comes later waits on the share lock until watch() commits, then finds
-- the row. Either the waiter reads the end or the completion tells it.
--
--   Lock order: an enqueue takes the 'any queue' key, then its queues' keys in
--   name order, all shared; sleep() only ever tries its keys.
--
-- A delayed task (run_at after now) notifies too: a sleeping worker sleeps
-- until the earliest due task of its queues (conductor.next_due), so it must
-- learn of an earlier one to recompute its wake-up. The notification tells it
-- to look again; it claims nothing before the task is due.

begin;
set local role conductor_owner;

-- v0.1.0's answered nothing; it answers whether it notified, so enqueue can call
-- it as an expression rather than a PERFORM (a statement's executor start each time)

create or replace function conductor._notify_queue(queue text) returns boolean
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_sleeper boolean := true;
  v_subscriber boolean;
begin
  if pg_catalog.current_setting('transaction_isolation') = 'read committed' then
    -- held to commit: a worker marking itself meanwhile fails its try-lock (see the map);
    -- the try is a simple expression, the wait only when a sleep() holds the key this instant
    if not pg_catalog.pg_try_advisory_xact_lock_shared(pg_catalog.hashtext('conductor:enqueue:any'), 0) then
      perform pg_catalog.pg_advisory_xact_lock_shared(pg_catalog.hashtext('conductor:enqueue:any'), 0);
    end if;
    if not pg_catalog.pg_try_advisory_xact_lock_shared(pg_catalog.hashtext('conductor:enqueue:queue'),
                                                       pg_catalog.hashtext(_notify_queue.queue)) then
      perform pg_catalog.pg_advisory_xact_lock_shared(pg_catalog.hashtext('conductor:enqueue:queue'),
                                                      pg_catalog.hashtext(_notify_queue.queue));
    end if;
    -- one statement for both probes: the hot path pays one executor start, as before the bus
    select exists (select from conductor.sleepers s where s.queue in (_notify_queue.queue, '*')),
           exists (select from conductor.subscriptions b where b.topic in ('tasks', '*'))
      into v_sleeper, v_subscriber;
  else
    v_subscriber := exists (select from conductor.subscriptions b where b.topic in ('tasks', '*'));
  end if;
  if v_subscriber then
    perform conductor._publish('tasks', pg_catalog.jsonb_build_object('event', 'queued', 'queue', _notify_queue.queue));
  end if;
  if not v_sleeper then
    return false;
  end if;
  perform pg_catalog.pg_notify('conductor', _notify_queue.queue);
  return true;
end
$$;

comment on function conductor._notify_queue(text) is
$$Work may be ready in queue: notifies channel 'conductor' (payload the queue's name) when
a worker sleeps on the queue or on every queue, after taking the queue's in-flight locks
that sleep() tries; answers whether it notified. At REPEATABLE READ or SERIALIZABLE it
always notifies. Publishes {"event": "queued", "queue": queue} on bus topic 'tasks' when a
session subscribes to it (or to '*').$$;

create or replace function conductor._notify_done(task_ids bigint[]) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_told bigint[];
  v_subscriber boolean;
  v_payload text;
begin
  if coalesce(pg_catalog.cardinality(_notify_done.task_ids), 0) = 0 then
    return;
  end if;
  -- a statement after the completion's update: its snapshot sees every watch()
  -- that committed before (see the map); the bus probe rides along (one executor start)
  with told as (
    delete from conductor.result_waiters w
     where w.task_id = any (_notify_done.task_ids)
    returning w.task_id
  )
  select pg_catalog.array_agg(distinct t.task_id order by t.task_id),
         exists (select from conductor.subscriptions b where b.topic in ('tasks', '*'))
    into v_told, v_subscriber
    from told t;
  if v_subscriber then
    -- every finished id, 350 a message: 350 ids of 20 characters fit in one notification
    for i in 0 .. (pg_catalog.cardinality(_notify_done.task_ids) - 1) / 350 loop
      perform conductor._publish('tasks', pg_catalog.jsonb_build_object(
        'event', 'finished', 'ids', pg_catalog.to_jsonb(_notify_done.task_ids[i * 350 + 1 : (i + 1) * 350])));
    end loop;
  end if;
  if pg_catalog.current_setting('transaction_isolation') <> 'read committed' then
    v_told := _notify_done.task_ids;  -- an older snapshot may have missed a waiter
  end if;
  if v_told is null then
    return;
  end if;
  v_payload := pg_catalog.array_to_string(v_told, ',');
  perform pg_catalog.pg_notify('conductor_done',
    case when pg_catalog.length(v_payload) > 7900 then '*' else v_payload end);
end
$$;

comment on function conductor._notify_done(bigint[]) is
$$Tasks finished: notifies channel 'conductor_done' with those of task_ids a session waits
on (watch), joined by ',' ('*' when over 7900 bytes), and removes those waiters; nothing
when none waits. At REPEATABLE READ or SERIALIZABLE it names every id. Publishes
{"event": "finished", "ids": [...]} (every id of task_ids, 350 a message) on bus topic
'tasks' when a session subscribes to it (or to '*').$$;

-- v0.1.0 notified from a statement-level trigger on conductor.tasks; capturing
-- every inserted row in its transition table cost a tenth of a single
-- enqueue. The two statements that insert tasks (enqueue, and _enqueue for
-- enqueue_many, spawn and tick) call _notify_queue for the queues they wrote.

create or replace function conductor.sleep(worker_id text, queues text[] default null) returns boolean
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_marks text[] := coalesce(sleep.queues, array['*']);
begin
  if sleep.worker_id is null or sleep.worker_id = '' then
    raise exception 'sleep needs a worker_id' using errcode = 'QC106';
  end if;
  perform conductor._check_scope(sleep.queues, null);
  -- a worker that never registered (or that reap forgot) gets a bare row, as heartbeat does
  insert into conductor.workers as w (id, started_at, last_seen_at)
  values (sleep.worker_id, v_now, v_now)
  on conflict on constraint workers_pkey do nothing;
  delete from conductor.sleepers s
   where s.worker_id = sleep.worker_id and s.queue <> all (v_marks);
  insert into conductor.sleepers as s (queue, worker_id, since)
  select distinct m.queue, sleep.worker_id, v_now from pg_catalog.unnest(v_marks) m(queue)
  on conflict on constraint sleepers_pkey do nothing;
  -- held to commit: an enqueue that locks after this blocks until the mark is visible
  if sleep.queues is null then
    return pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtext('conductor:enqueue:any'), 0);
  end if;
  return (select pg_catalog.bool_and(
                   pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtext('conductor:enqueue:queue'),
                                                        pg_catalog.hashtext(q.queue)))
            from (select distinct m.queue from pg_catalog.unnest(v_marks) m(queue)) q);
end
$$;

comment on function conductor.sleep(text, text[]) is
$$A worker that found nothing to claim records that it waits on LISTEN conductor for work in
queues (NULL: every queue), replacing its earlier marks, so that enqueues into them notify.
Call it in a transaction of its own (autocommit), then claim once more. Returns true when no
enqueue that could have missed the mark is in flight: if that claim finds nothing, wait for a
notification (or a due time, or the poll); false when one is: wait a few milliseconds, then
sleep and claim again. Never waits for a lock. Creates a bare workers row for an unregistered
worker_id. Raises QC104 for an empty queues list or one holding NULL, QC106 for a missing
worker_id.$$;

create or replace function conductor.wake(worker_id text) returns void
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  delete from conductor.sleepers s where s.worker_id = wake.worker_id
$$;

comment on function conductor.wake(text) is
$$The worker is busy again (a claim came back full) or stopping: enqueues stop notifying on
its account. Idempotent; deregister_worker and reap's forgetting of the worker do the same.$$;

-- its return type gained the dedupe options after v0.2.0 (issue 30)
drop function conductor.watch(bigint);
create or replace function conductor.watch(task_id bigint)
  returns table (
    id bigint, queue text, kind text, status conductor.task_status, payload jsonb,
    result jsonb, error text, priority integer, run_at timestamptz, attempt integer,
    max_attempts integer, recoveries integer, max_recoveries integer,
    parent_id bigint, root_id bigint, dedupe_key text, concurrency_key text,
    enqueued_at timestamptz, started_at timestamptz, finished_at timestamptz,
    attempts jsonb, timeout interval)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_status conductor.task_status;
begin
  insert into conductor.result_waiters as w (task_id, pid, since)
  values (watch.task_id, pg_catalog.pg_backend_pid(), conductor.now())
  on conflict on constraint result_waiters_pkey do nothing;
  -- after the row, in the same transaction: waits out a completion in flight (see the map)
  select t.status into v_status from conductor.tasks t where t.id = watch.task_id for share;
  if not found then
    raise exception 'task % does not exist', watch.task_id using errcode = 'QC203';
  end if;
  if v_status not in ('queued', 'running', 'waiting') then
    -- already finished: nothing will tell this session, so it does not wait
    delete from conductor.result_waiters w
     where w.task_id = watch.task_id and w.pid = pg_catalog.pg_backend_pid();
  end if;
  return query select * from conductor.get_task(watch.task_id);
end
$$;

comment on function conductor.watch(bigint) is
$$Records that this session waits for the end of task_id, then returns the task as get_task
does, read after any completion of it in flight. Call it on the connection that LISTENs on
conductor_done: when the task finishes, a notification names it (then call watch again, or
get_task). A finished task is returned and not watched. unwatch gives up; a session that ends
is forgotten by reap. Raises QC203 when the task does not exist.$$;

create or replace function conductor.unwatch(task_id bigint) returns void
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  delete from conductor.result_waiters w
   where w.task_id = unwatch.task_id and w.pid = pg_catalog.pg_backend_pid()
$$;

comment on function conductor.unwatch(bigint) is
$$This session no longer waits for task_id (a timeout, say). Idempotent; the completion that
notifies a waiter removes its interest itself.$$;

revoke execute on function conductor._notify_queue(text) from public;
revoke execute on function conductor._notify_done(bigint[]) from public;
revoke execute on function conductor.sleep(text, text[]) from public;
revoke execute on function conductor.wake(text) from public;
revoke execute on function conductor.watch(bigint) from public;
revoke execute on function conductor.unwatch(bigint) from public;
grant execute on function conductor.sleep(text, text[]) to conductor_worker, conductor_admin;
grant execute on function conductor.wake(text) to conductor_worker, conductor_admin;
grant execute on function conductor.watch(bigint) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.unwatch(bigint) to conductor_client, conductor_worker, conductor_admin;

commit;
