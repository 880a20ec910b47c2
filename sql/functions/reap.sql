-- Deploy conductor:functions/reap to pg
--
-- conductor.reap(): takes back every running task whose lease expired. A task
-- goes back to its queue with recoveries + 1, or is dead ("worker lost N
-- times") once that passes max_recoveries (3 by default, so the fourth loss is
-- final); its attempt is closed as 'lost' and does not count against
-- max_attempts. Workers not seen for stale_workers_after are forgotten.
--
-- Compare-and-set: the expired rows are locked FOR UPDATE SKIP LOCKED and
-- re-checked on their latest version, so any number of reapers may run at once
-- and a late one never touches a task that finished, was heartbeated or was
-- reclaimed meanwhile. Lock order: task rows, then attempt rows.

begin;

create function conductor.reap(stale_workers_after interval default interval '15 minutes')
  returns integer
  language plpgsql volatile
  security definer
  set search_path = ''
as $$
declare
  v_now timestamptz := conductor.now();
  v_reaped integer;
  v_queues text[];
  v_queue text;
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
         pg_catalog.array_agg(distinct r.queue) filter (where r.status = 'queued' and r.run_at <= v_now)
    into v_reaped, v_queues
    from reaped r;

  foreach v_queue in array coalesce(v_queues, '{}') loop
    perform conductor._notify_queue(v_queue);
  end loop;

  delete from conductor.workers w where w.last_seen_at < v_now - reap.stale_workers_after;
  return v_reaped;
end
$$;

comment on function conductor.reap(interval) is
$$Takes back every running task whose lease expired: queued again with recoveries + 1,
or dead ('worker lost N times') past max_recoveries; the attempt is closed as 'lost'.
Also deletes workers rows not seen for stale_workers_after (15 min). Returns how many
tasks it took back. Compare-and-set with SKIP LOCKED: safe to run from every worker at
once; a late reaper never touches a task that finished or was reclaimed.$$;

revoke execute on function conductor.reap(interval) from public;
grant execute on function conductor.reap(interval) to conductor_worker, conductor_admin;

commit;
