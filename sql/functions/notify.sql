-- Deploy conductor:functions/notify to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/notify@v0.2.0.sql)
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
--         interest, then read the task after any completion in flight, keeping
--         no lock (called twice before a client waits: see below)
--     conductor.unwatch(task_id)                      give it up
--     conductor._notify_done(task_ids)                every completion (complete,
--         complete_many, fail, cancel, reap) calls it; it notifies only the
--         ids a waiter named, and removes those waiters (never waiting on one)
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
--   sleep() false  one may be: wait on the LISTEN connection a little (5 ms,
--                  doubling to about 1 s while it repeats), then sleep() and
--                  claim again
-- When a claim comes back full it calls wake(). Notifications are a latency
-- hint: workers poll too (a pooler in transaction mode drops them).
--
-- The race it closes, and how. An enqueue checks for sleepers in its own
-- transaction, which may commit much later (an application's request); a
-- worker that marks itself after that check and claims before that commit
-- would sleep past the task. So an enqueueing transaction holds, until it
-- commits, a shared transaction advisory lock on its queue (and one on 'any
-- queue'), taken with pg_try_advisory_xact_lock_shared before it reads
-- conductor.sleepers; sleep() tries the same key exclusively, in the
-- transaction that writes the mark. Neither ever waits for a key: any login
-- of the database, with no grant at all, can take any advisory lock (the keys
-- are in this file), so a wait on one would let it stall every enqueue.
--   - sleep()'s try fails: an enqueue that may have read the sleepers before
--     the mark is in flight (or some session holds the key): false, the
--     worker looks again shortly;
--   - it succeeds: every enqueue that read before is committed, so the
--     re-check claim sees its task; an enqueue that comes later, while the
--     mark is uncommitted, fails its own try;
--   - an enqueue's try fails (a sleep() is marking this instant, or some
--     session holds the key): it cannot know whether a mark it cannot see is
--     coming, so it notifies without reading the sleepers (the conservative
--     path: one notification, sent at its commit, which every worker LISTENing
--     then receives, whenever its own mark commits);
--   - it succeeds: it holds the key shared to its commit (a sleep() meanwhile
--     fails its try), and its read (a statement of its own, a fresh snapshot at
--     READ COMMITTED) sees every mark committed before; a mark written after
--     it is the sleep() that answers false.
-- An enqueue at REPEATABLE READ or SERIALIZABLE reads an older snapshot, so it
-- always notifies, and takes no key.
--
-- Why a foreign holder costs latency, never a lost task nor a spinning worker:
-- holding a key exclusively makes every enqueue notify (the conservative path);
-- holding it shared makes sleep() answer false for as long as it is held. The
-- mark is written and committed all the same, so every enqueue whose read comes
-- after it notifies; only an enqueue that read before the mark can have missed
-- it, and the worker's next re-check (its backoff, at most about 1 s, spent
-- waiting on the LISTEN connection) claims that task once it commits. So the
-- worker claims and re-marks about once a second instead of sleeping until a
-- notification: one short transaction a second per idle worker.
--
-- The same for results. A completion updates the task row, then (a later
-- statement, a fresh snapshot) reads the waiters of the finished ids, notifies
-- if there were any and deletes the rows it can lock (a row another session
-- holds, an unwatch() in flight say, is notified all the same and left to its
-- holder: the completion never waits for it). A waiter is told of every
-- completion whose read comes after its mark committed, so the protocol is
-- (docs/protocol.md, "Waiting for a result"):
--   1. LISTEN conductor_done; 2. watch(task_id) in a transaction of its own:
--   finished, done; 3. else watch(task_id) once more, in a new transaction:
--   finished, done; 4. else wait for a notification naming the id (or '*'),
--   then get_task (or watch once, and from 3 if unfinished).
-- The first call commits the mark. The second call's read comes after that
-- commit and waits out a completion in flight: it reads the task FOR SHARE in a
-- subtransaction that it rolls back at once, which releases the row lock (a row
-- lock belongs to the subtransaction's xid; once it aborted, no one waits on
-- it), so the read sees the end of a completion that was in flight and the
-- caller's transaction keeps no lock on the task: a client that leaves its
-- transaction open (begin; watch(a); watch(b); ...) hides no task from claim's
-- SKIP LOCKED and no report waits for it. A completion whose update comes after
-- that read reads the waiters after the mark committed: it notifies. (watch()
-- waits at most 1 s for a lock, lock_timeout; a row another transaction holds
-- longer, a client's cancel() left open, raises 55P03: call again later.)
--
--   Lock order: an enqueue tries the 'any queue' key, then its queue's key, all
--   shared; sleep() only ever tries its keys; watch() takes no lock beyond its
--   subtransaction; _notify_done locks waiter rows with SKIP LOCKED only.
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
  -- only ever tries a key, never waits for one (see the map); a failed try notifies
  if pg_catalog.current_setting('transaction_isolation') = 'read committed' then
    if pg_catalog.pg_try_advisory_xact_lock_shared(pg_catalog.hashtext('conductor:enqueue:any'), 0) then
      if pg_catalog.pg_try_advisory_xact_lock_shared(pg_catalog.hashtext('conductor:enqueue:queue'),
                                                     pg_catalog.hashtext(_notify_queue.queue)) then
        -- both held to commit: a worker marking itself meanwhile fails its try (see the
        -- map); one statement for both probes: the hot path pays one executor start
        select exists (select from conductor.sleepers s where s.queue in (_notify_queue.queue, '*')),
               exists (select from conductor.subscriptions b where b.topic in ('tasks', '*'))
          into v_sleeper, v_subscriber;
      end if;
    end if;
  end if;
  if v_subscriber is null then
    -- REPEATABLE READ or SERIALIZABLE (an older snapshot), or a try failed: notify
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
a worker sleeps on the queue or on every queue; answers whether it notified. Tries (never
waits for) the queue's and the 'any queue' keys that sleep() tries, shared, held to the
commit; when a try fails (a sleep() marking at that instant, or any session holding a key)
it notifies without reading the sleepers. At REPEATABLE READ or SERIALIZABLE it always
notifies. Publishes {"event": "queued", "queue": queue} on bus topic 'tasks' when a
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
  -- that committed before (see the map); the bus probe rides along (one executor start).
  -- A read, not a delete: a waiter row another session holds is told all the same.
  select pg_catalog.array_agg(distinct w.task_id order by w.task_id),
         exists (select from conductor.subscriptions b where b.topic in ('tasks', '*'))
    into v_told, v_subscriber
    from conductor.result_waiters w
   where w.task_id = any (_notify_done.task_ids);
  if v_told is not null then
    -- the waiters told are done waiting; one another session holds (its unwatch, or a
    -- watch of the finished task, not committed yet) is its holder's: never waited on
    delete from conductor.result_waiters w
     using (select x.task_id, x.pid from conductor.result_waiters x
             where x.task_id = any (v_told)
               for update skip locked) l
     where w.task_id = l.task_id and w.pid = l.pid;
  end if;
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
on (watch), joined by ',' ('*' when over 7900 bytes), and removes those waiters (all but a
row another transaction holds, which it never waits for); nothing when none waits. Call it
in a statement after the one that finished the tasks (its snapshot must see every waiter
committed before). At REPEATABLE READ or SERIALIZABLE it names every id. Publishes
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
  perform conductor._check_queue_names(sleep.queues);  -- the marks are rows others read
  perform conductor._check_worker_owner(sleep.worker_id);
  -- a worker that never registered (or that reap forgot) gets a bare row, as heartbeat does
  insert into conductor.workers as w (id, started_at, last_seen_at, owner)
  values (sleep.worker_id, v_now, v_now, conductor._caller())
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
notification (or a due time, or the poll); false when one may be (or any session holds the
queue's key, which any login can): wait on the LISTEN connection a little, 5 ms doubling to
about 1 s while it repeats, then sleep and claim again. Never waits for a lock: it only
tries the keys, exclusively, held to its commit. Creates a bare workers row for an
unregistered worker_id. Raises QC104 for an empty queues list, one holding NULL or one
naming an invalid queue (enqueue's rule), QC106 for a missing worker_id.
Raises QC208 when another login registered worker_id (an admin may); the bare row it writes
for an unregistered id is the caller's.$$;

create or replace function conductor.wake(worker_id text) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform conductor._check_worker_owner(wake.worker_id);
  delete from conductor.sleepers s where s.worker_id = wake.worker_id;
end
$$;

comment on function conductor.wake(text) is
$$The worker is busy again (a claim came back full) or stopping: enqueues stop notifying on
its account. Idempotent; deregister_worker and reap's forgetting of the worker do the same.
Raises QC208 when another login registered worker_id (an admin may wake any).$$;

-- watch returns get_task's columns, which gain the dedupe options (issue 30), a fork's
-- source, the code version and the graph (issue 31): dropped and created again
drop function if exists conductor.watch(bigint);
create or replace function conductor.watch(task_id bigint)
  returns table (
    id bigint, queue text, kind text, status conductor.task_status, payload jsonb,
    result jsonb, error text, priority integer, run_at timestamptz, attempt integer,
    max_attempts integer, recoveries integer, max_recoveries integer,
    parent_id bigint, root_id bigint, dedupe_key text, concurrency_key text,
    enqueued_at timestamptz, started_at timestamptz, finished_at timestamptz,
    attempts jsonb, timeout interval,
    dedupe_states conductor.task_status[], dedupe_until timestamptz, debounce_until timestamptz,
    forked_from bigint, forked_at_step text, code_version text, graph_id bigint)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set lock_timeout = '1s'
as $$
declare
  v_status conductor.task_status;
begin
  insert into conductor.result_waiters as w (task_id, pid, since)
  values (watch.task_id, pg_catalog.pg_backend_pid(), conductor.now())
  on conflict on constraint result_waiters_pkey do nothing;
  -- Wait out a completion in flight, and keep no lock (see the map): the share lock is
  -- taken in this block's subtransaction, which the raise rolls back, releasing it; the
  -- status read under it stays in v_status.
  begin
    select t.status into v_status from conductor.tasks t where t.id = watch.task_id for share;
    raise exception using errcode = 'QC000';  -- never leaves this block
  exception when sqlstate 'QC000' then
    null;
  end;
  if v_status is null then
    raise exception 'task % does not exist', watch.task_id using errcode = 'QC203';
  end if;
  if v_status <> all (conductor.unfinished_statuses()) then
    -- already finished: nothing will tell this session, so it does not wait
    delete from conductor.result_waiters w
     where w.task_id = watch.task_id and w.pid = pg_catalog.pg_backend_pid();
  end if;
  return query select * from conductor.get_task(watch.task_id);
end
$$;

comment on function conductor.watch(bigint) is
$$Records that this session waits for the end of task_id, then returns the task as get_task
does, read after any completion of it in flight. Leaves no lock in the caller's transaction
(it waits out that completion under a share lock taken in a subtransaction it rolls back).
The protocol, on a connection that LISTENs on conductor_done, each call in a transaction of
its own (autocommit): call watch; finished: that is the answer; else call watch once more
(the first call committed the mark: the second call's read, or a notification, tells of
every end after it); finished: the answer; else wait for a notification naming the id (or
'*'), then get_task. A finished task is returned and not watched. unwatch gives up; a
session that ends is forgotten by reap. Raises QC203 when the task does not exist, 55P03
(lock_not_available) when another transaction holds the task's row for over 1 s (a client's
cancel left open): call again later. At REPEATABLE READ a completion that commits while it
waits raises 40001: call it at READ COMMITTED.$$;

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
