-- Revert conductor:functions/reap from pg: back to its v0.1.0 body
--
-- The v0.1.0 deploy script (functions/reap@v0.1.0.sql), with create or replace, and
-- search_path pinned to pg_catalog, pg_temp instead of '': going back to v0.1.0's
-- bodies does not reopen the pg_temp escalation (issue 14).
--
-- conductor.reap(): takes back every running task whose lease expired. A task
-- goes back to its queue with recoveries + 1, or is dead ("worker lost N
-- times") once that passes max_recoveries (3 by default, so the fourth loss is
-- final); its attempt is closed as 'lost' and does not count against
-- max_attempts. It also ends the waits that reached their deadline: a sleep
-- wakes; an event wait wakes with {"timed_out": true} checkpointed; a wait for
-- children ends the task timed_out after cancelling its unfinished children.
-- Workers not seen for stale_workers_after are forgotten.
--
-- conductor.next_wake(): when reap next has something to do, so a worker can
-- run it then rather than only every reap interval (durable sleeps wake on time).
--
-- Compare-and-set: the expired rows are locked FOR UPDATE SKIP LOCKED and
-- re-checked on their latest version, so any number of reapers may run at once
-- and a late one never touches a task that finished, was heartbeated or was
-- reclaimed meanwhile. Lock order: task rows (children before parents: a
-- timed-out wait cancels the children first), then steps and attempt rows.

begin;

-- new in 0.2.0
drop function conductor.next_due(text[], text[]);
drop function conductor._unserved(timestamptz);

create or replace function conductor.reap(stale_workers_after interval default interval '15 minutes')
  returns integer
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_reaped integer;
  v_reaped_ids bigint[];
  v_dead bigint[];
  v_queues text[];
  v_queue text;
  v_task record;
begin
  with expired as (
    select t.id, t.attempt_id from conductor.tasks t
     where t.status = 'running' and t.lease_expires_at < v_now
     order by t.id
       for update skip locked
  ), reaped as (
    update conductor.tasks t
       set status = case when t.recoveries + 1 > t.max_recoveries then 'dead'
                         else 'queued' end::conductor.task_status,
           recoveries = t.recoveries + 1,
           attempt = t.attempt - 1,
           lease_expires_at = null,
           error = case when t.recoveries + 1 > t.max_recoveries
                        then pg_catalog.format('worker lost %s times', t.recoveries + 1)
                        else t.error end,
           finished_at = case when t.recoveries + 1 > t.max_recoveries then v_now end
      from expired
     where t.id = expired.id
    returning t.id, t.attempt_id, t.queue, t.status, t.run_at
  ), closed as (
    update conductor.attempts a
       set outcome = 'lost', finished_at = v_now,
           error = pg_catalog.format('lease expired at %s; worker %s presumed lost',
                                     v_now, a.worker_id)
      from reaped r
     where a.id = r.attempt_id
  )
  select pg_catalog.count(*)::integer,
         pg_catalog.array_agg(distinct r.queue) filter (where r.status = 'queued' and r.run_at <= v_now),
         pg_catalog.array_agg(r.id)
    into v_reaped, v_queues, v_reaped_ids
    from reaped r;

  foreach v_queue in array coalesce(v_queues, '{}') loop
    perform conductor._notify_queue(v_queue);
  end loop;
  select pg_catalog.array_agg(t.id) into v_dead
    from conductor.tasks t
   where t.id = any (v_reaped_ids) and t.status = 'dead';
  perform conductor._notify_done(v_dead);

  -- sleeps and event waits that reached their deadline wake
  for v_task in
    select t.id, t.wait_for, t.wait_event from conductor.tasks t
     where t.status = 'waiting' and t.wait_until <= v_now and t.wait_for in ('sleep', 'event')
     order by t.id desc
       for no key update skip locked
  loop
    perform conductor._wake(v_task.id,
      case when v_task.wait_for = 'event'
           then pg_catalog.jsonb_build_object('event', v_task.wait_event, 'timed_out', true) end);
    v_reaped := v_reaped + 1;
  end loop;

  -- waits for children past their deadline: the children are cancelled first
  -- (children before parents), then the task ends timed_out; a child's end
  -- does not wake a parent whose deadline passed
  for v_task in
    select t.id, t.wait_for, t.wait_until from conductor.tasks t
     where t.status = 'waiting' and t.wait_until <= v_now
       and t.wait_for in ('children_all', 'children_any')
     order by t.id desc
  loop
    perform conductor.cancel(c.id)
       from conductor.tasks c
      where c.parent_id = v_task.id and c.status in ('queued', 'running', 'waiting')
      order by c.id desc;
    update conductor.tasks t
       set status = 'timed_out', finished_at = v_now,
           error = pg_catalog.format('waited for its children past its deadline %s', v_task.wait_until),
           wait_for = null, wait_event = null, wait_until = null, wait_step = null
     where t.id = v_task.id and t.status = 'waiting' and t.wait_until <= v_now;
    if found then
      perform conductor._notify_done(array[v_task.id]);
      v_reaped := v_reaped + 1;
    end if;
  end loop;

  delete from conductor.workers w where w.last_seen_at < v_now - reap.stale_workers_after;
  return v_reaped;
end
$$;

comment on function conductor.reap(interval) is
$$Takes back every running task whose lease expired: queued again with recoveries + 1,
or dead ('worker lost N times') past max_recoveries; the attempt is closed as 'lost'.
Ends the waits that reached their deadline: sleeps and event waits are queued again (an
event wait with {"event", "timed_out": true} as its outcome); a wait for children ends
timed_out and its unfinished children are cancelled. Also deletes workers rows not seen
for stale_workers_after (15 min). Returns how many tasks it took back or woke. Compare-and-set with SKIP LOCKED: safe to run from every worker at
once; a late reaper never touches a task that finished or was reclaimed.$$;

create or replace function conductor.next_wake() returns timestamptz
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select least((select pg_catalog.min(t.wait_until) from conductor.tasks t where t.status = 'waiting'),
                (select pg_catalog.min(t.lease_expires_at) from conductor.tasks t where t.status = 'running'))
$$;

comment on function conductor.next_wake() is
$$The earliest time reap() will have something to do (a wait's deadline, a lease's expiry),
or NULL when nothing waits or runs. A worker runs reap() then, rather than only every
reap interval, so durable sleeps wake on time.$$;

revoke execute on function conductor.next_wake() from public;
grant execute on function conductor.next_wake() to conductor_worker, conductor_admin;
revoke execute on function conductor.reap(interval) from public;
grant execute on function conductor.reap(interval) to conductor_worker, conductor_admin;

commit;
