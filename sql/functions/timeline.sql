-- Deploy conductor:functions/timeline to pg
--
-- A run's timeline (issue 29): where the time of a durable run went, for the dashboard's
-- waterfall and any other reader.
--
--   conductor.run_timeline(run_task_id, max_tasks) -> spans   the run of any of its tasks, in time order
--
-- Tables read (nothing is written or locked): tasks (by root_id: tasks_run), attempts (by
-- task_id: attempts_task), steps (by its primary key, task_id first).
--
-- The spans, each one row (finished_at NULL: still going):
--   task     a task of the run, enqueued to finished (what: its status; label: its kind)
--   queued   ready or due, waiting for a worker: enqueued to the first claim, and after an
--            attempt that failed (to be retried), was lost or released, or after a wake
--   attempt  one claim, claimed to finished (what: its outcome, 'running' while it runs);
--            label: "attempt n", a claim that resumes a wait "attempt n, resume k"
--   step     a checkpoint an attempt saved: from the attempt's previous checkpoint (or its
--            claim) to its save (what: 'spawn' when it spawned a child, else 'step')
--   wait     a suspended attempt's wait, to its wake (what: 'sleep', 'event', 'children';
--            'waiting' when its kind is no longer known: the wait ended without a wake)
-- How a past wait is known: suspend checkpoints a sleep's wake time under the sleeping
-- attempt at once ({"until"}); the wake-up (_wake_tasks) checkpoints an event's or the
-- children's outcome with no attempt ({"event", ...} or an array); a wait still going is
-- the task's wait_for.

begin;
set local role conductor_owner;

create or replace function conductor.run_timeline(run_task_id bigint, max_tasks integer default 500)
  returns table (
    span text, task_id bigint, parent_id bigint, attempt_id bigint, what text, label text,
    started_at timestamptz, finished_at timestamptz, error text)
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_root bigint;
begin
  if run_timeline.max_tasks is null or run_timeline.max_tasks < 1 or run_timeline.max_tasks > 10000 then
    raise exception 'invalid max_tasks %: between 1 and 10000', coalesce(run_timeline.max_tasks::text, 'NULL')
      using errcode = 'QC106';
  end if;
  select t.root_id into v_root from conductor.tasks t where t.id = run_timeline.run_task_id;
  if not found then
    raise exception 'task % does not exist', run_timeline.run_task_id using errcode = 'QC203';
  end if;

  return query
  with run as (
    select t.* from conductor.tasks t where t.root_id = v_root order by t.id limit run_timeline.max_tasks
  ), claims as (
    select a.id, a.task_id, a.claimed_at, a.finished_at, a.outcome, a.error,
           pg_catalog.lead(a.claimed_at) over w as next_claimed_at,
           (pg_catalog.lag(a.outcome) over w is not distinct from 'suspended') as resumes
      from conductor.attempts a
     where a.task_id in (select r.id from run r)
    window w as (partition by a.task_id order by a.id)
  ), tries as (
    select c.*, pg_catalog.sum(case when c.resumes then 0 else 1 end)
                  over (partition by c.task_id order by c.id)::integer as try
      from claims c
  ), labelled as (
    select t.*, (pg_catalog.row_number() over (partition by t.task_id, t.try order by t.id) - 1)::integer as resume
      from tries t
  ), saved as (
    select s.task_id, s.name, s.result, s.attempt_id, s.saved_at,
           coalesce(pg_catalog.lag(s.saved_at) over (partition by s.attempt_id order by s.saved_at, s.name),
                    a.claimed_at) as began_at
      from conductor.steps s
      left join conductor.attempts a on a.id = s.attempt_id
     where s.task_id in (select r.id from run r)
  ), waits as (
    -- each suspended attempt's wait: its sleep checkpoint, else the wake's checkpoint between
    -- the suspend and the next claim, else (no wake yet) the task's own wait state
    select l.id as attempt_id, l.task_id, l.finished_at as began_at, l.next_claimed_at,
           r.status, r.finished_at as task_finished_at, r.wait_for, r.wait_event, r.wait_until,
           coalesce(sleep.name, woke.name, r.wait_step) as step,
           case when sleep.name is not null then 'sleep'
                when pg_catalog.jsonb_typeof(woke.result) = 'array' then 'children'
                when woke.result ? 'event' then 'event'
                when l.next_claimed_at is null and r.status = 'waiting' then
                  case when r.wait_for like 'children%' then 'children' else r.wait_for end
                else 'waiting' end as what,
           coalesce(woke.result->>'event', case when l.next_claimed_at is null then r.wait_event end) as event,
           (sleep.result->>'until')::timestamptz as until,
           woke.saved_at as woken_at
      from labelled l
      join run r on r.id = l.task_id
      left join lateral (
        select s.name, s.result from conductor.steps s
         where s.task_id = l.task_id and s.attempt_id = l.id and s.saved_at = l.finished_at
           and pg_catalog.jsonb_typeof(s.result) = 'object' and s.result ? 'until'
         limit 1) sleep on true
      left join lateral (
        select s.name, s.result, s.saved_at from conductor.steps s
         where s.task_id = l.task_id and s.attempt_id is null and s.saved_at >= l.finished_at
           and (l.next_claimed_at is null or s.saved_at <= l.next_claimed_at)
         order by s.saved_at limit 1) woke on sleep.name is null
     where l.outcome = 'suspended'
  ), woken as (
    select w.*,
           case when w.what = 'sleep' then
                  case when w.next_claimed_at is not null then least(w.until, w.next_claimed_at)
                       when w.status = 'waiting' then null
                       else least(w.until, coalesce(w.task_finished_at, w.until)) end
                when w.woken_at is not null then w.woken_at
                when w.next_claimed_at is not null then w.next_claimed_at
                else w.task_finished_at end as ended_at
      from waits w
  ), spans as (
    -- rank: at one instant a task's span comes first, the queued time that follows
    -- an attempt or a wait last
    select 'task'::text as span, r.id as task_id, r.parent_id, null::bigint as attempt_id, r.status::text as what,
           r.kind as label, r.enqueued_at as started_at, r.finished_at, r.error, 0 as rank
      from run r
    union all
    -- queued before the first claim (or until the task ended unclaimed)
    select 'queued', r.id, r.parent_id, null, 'queued', 'queued', r.enqueued_at,
           coalesce((select pg_catalog.min(c.claimed_at) from claims c where c.task_id = r.id), r.finished_at),
           null, 1
      from run r
    union all
    -- queued again after an attempt that did not end the task (and did not suspend it)
    select 'queued', l.task_id, r.parent_id, l.id, 'queued', 'queued again', l.finished_at, l.next_claimed_at,
           null, 5
      from labelled l join run r on r.id = l.task_id
     where l.outcome in ('failed', 'lost', 'released')
       and (l.next_claimed_at is not null or r.status = 'queued')
    union all
    select 'attempt', l.task_id, r.parent_id, l.id, coalesce(l.outcome, 'running'),
           'attempt ' || l.try || case when l.resume > 0 then ', resume ' || l.resume else '' end,
           l.claimed_at, l.finished_at, l.error, 2
      from labelled l join run r on r.id = l.task_id
    union all
    select 'step', s.task_id, r.parent_id, s.attempt_id,
           case when pg_catalog.jsonb_typeof(s.result) = 'object' and s.result ? 'task_id' then 'spawn' else 'step' end,
           s.name, s.began_at, s.saved_at, null, 3
      from saved s join run r on r.id = s.task_id
     where s.attempt_id is not null
       and not exists (select from waits w where w.attempt_id = s.attempt_id and w.what = 'sleep' and w.step = s.name)
    union all
    select 'wait', w.task_id, r.parent_id, w.attempt_id, w.what,
           case w.what when 'sleep' then 'sleep until ' || pg_catalog.to_char(coalesce(w.until, w.wait_until) at time zone 'UTC',
                                                                              'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                       when 'event' then 'event ' || coalesce(w.event, '?')
                       when 'children' then 'children'
                       else 'waiting' end,
           w.began_at, w.ended_at, null, 4
      from woken w join run r on r.id = w.task_id
    union all
    -- queued after a wake, until the claim that resumed the run (or still)
    select 'queued', w.task_id, r.parent_id, w.attempt_id, 'queued', 'queued after the wake', w.ended_at,
           w.next_claimed_at, null, 5
      from woken w join run r on r.id = w.task_id
     where w.ended_at is not null and (w.next_claimed_at is not null or r.status = 'queued')
  )
  select sp.span, sp.task_id, sp.parent_id, sp.attempt_id, sp.what, sp.label, sp.started_at, sp.finished_at, sp.error
    from spans sp
   order by sp.started_at, sp.task_id, sp.rank, sp.attempt_id nulls first, sp.finished_at nulls last, sp.label;
end
$$;

comment on function conductor.run_timeline(bigint, integer) is
$$The timeline of the run that task run_task_id belongs to (its root and the root's descendants, at most
max_tasks tasks, by id), as spans in time order (started_at, then task): span 'task' (a task
enqueued to finished; what: its status; label: its kind), 'queued' (waiting for a worker:
before the first claim, after a failed, lost or released attempt, after a wake), 'attempt'
(a claim; what: its outcome, 'running' while it runs; label 'attempt n' counting the tries,
'attempt n, resume k' for the k-th claim that resumes a wait of try n; error), 'step' (a
checkpoint an attempt saved, from its previous checkpoint or its claim; what: 'spawn' or
'step'; label: its name), 'wait' (a suspended attempt's wait to its wake; what: 'sleep',
'event', 'children', or 'waiting' when it ended without a wake). finished_at NULL: still
going. Raises QC203 when the task does not exist, QC106 for a max_tasks outside 1..10000.
Reads only, takes no locks; any number of callers.$$;

revoke execute on function conductor.run_timeline(bigint, integer) from public;
grant execute on function conductor.run_timeline(bigint, integer) to conductor_client, conductor_worker, conductor_admin;

commit;
