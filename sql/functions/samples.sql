-- Deploy conductor:functions/samples to pg
--
-- Queues over time (issue 29): what the dashboard's charts draw, per queue and
-- minute, from a small table one sampler of the fleet writes once a minute.
--
--   conductor.sample_queues() -> integer            worker, admin
--        writes the last whole minute (and the whole minutes missed since the
--        last sample, a day back at most), once per minute however many samplers
--        run; deletes samples of minutes older than settings.retain_samples
--        before the current minute
--   conductor.queue_series(since, until, step, queues) -> (queue, at, finished,
--        failed, depth, oldest_age, minutes)         client, worker, admin
--        the points of a chart: per queue (queues NULL: every queue sampled) and
--        step from since to until
--   conductor._minute_of(at) -> timestamptz         (helper, no grants) the
--        start of at's minute (UTC, whole seconds of the epoch)
--
-- Tables: conductor.sample_minutes, conductor.queue_samples (written: sample_queues
-- only), conductor.settings (retain_samples), conductor.tasks (read: finished rows
-- by the index tasks_finished (finished_at) include (queue, status), an
-- index-only range scan of the minutes written; ready rows by tasks_ready_by_queue,
-- as stats() counts them).
--
-- What a minute holds (queue_samples): finished, the tasks whose finished_at falls
-- in [minute, minute + 1 minute), whatever their final status; failed, those of
-- them failed or dead (stats()'s rule); depth, the ready tasks (queued and due),
-- and oldest_age, now less the earliest due time of a ready task, both read when
-- the minute was sampled (sample_minutes.sampled_at, in the minute after it).
-- A minute the sampler missed (no maintenance process ran) is backfilled from the
-- finished tasks at the next sample, when they are still there (retention may have
-- deleted them), but nobody read its depth and age: they stay NULL, and there is
-- no way to know them afterwards. A task that commits its finish after its minute
-- was sampled (a transaction that stamped finished_at before and committed after
-- the sample, or a fake clock moved back) is not counted.
--
-- Races and locks: a sampler claims its minutes by inserting their keys in
-- sample_minutes in ascending order (ON CONFLICT DO NOTHING), so a second sampler
-- running at the same time waits on the first's keys, then skips those minutes:
-- each minute is written once. The deletions take only rows older than any minute
-- a sampler writes. Nothing on the hot path reads or locks these tables.
-- queue_series reads a snapshot and locks nothing.

begin;
set local role conductor_owner;

create or replace function conductor._minute_of(at timestamptz) returns timestamptz
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.date_bin(interval '1 minute', _minute_of.at, timestamptz '2000-01-01 00:00:00+00')
$$;

comment on function conductor._minute_of(timestamptz) is
  'The start of the minute holding at (whole minutes of UTC, whatever the session''s TimeZone).';

revoke execute on function conductor._minute_of(timestamptz) from public;

create or replace function conductor.sample_queues()
  returns integer
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  -- index probes whatever the statistics: a sequential scan of conductor.tasks would read the
  -- whole history every minute
  set enable_seqscan = off
  set jit = off
as $$
declare
  v_now      timestamptz := conductor.now();
  v_minute   timestamptz := conductor._minute_of(v_now) - interval '1 minute';  -- the last whole minute
  v_earliest timestamptz := pg_catalog.lower(conductor._time_range());
  v_keep     interval;
  v_from     timestamptz;
  v_written  timestamptz[];
  v_live     boolean;
begin
  select s.retain_samples into v_keep from conductor.settings s where s.one;

  -- the minutes since the last one written, a day (or the retention) back at most
  select greatest(pg_catalog.max(m.minute) + interval '1 minute',
                  v_minute - least(interval '1 day', v_keep) + interval '1 minute')
    into v_from
    from conductor.sample_minutes m;
  v_from := coalesce(v_from, v_minute - least(interval '1 day', v_keep) + interval '1 minute');

  -- claimed in ascending order: a minute another sampler holds is waited for, then skipped
  with claimed as (
    insert into conductor.sample_minutes as m (minute, sampled_at)
    select g.minute, case when g.minute = v_minute then v_now end
      from pg_catalog.generate_series(v_from, v_minute, interval '1 minute') g (minute)
     order by g.minute
    on conflict (minute) do nothing
    returning m.minute)
  select pg_catalog.array_agg(c.minute) into v_written from claimed c;

  if v_written is not null then
    v_live := v_minute = any (v_written);
    insert into conductor.queue_samples (queue, minute, finished, failed, depth, oldest_age)
    select r.queue, r.minute,
           pg_catalog.sum(r.finished)::integer, pg_catalog.sum(r.failed)::integer,
           case when r.minute = v_minute and v_live then pg_catalog.sum(r.depth)::integer end,
           case when r.minute <> v_minute or not v_live then null
                when pg_catalog.min(r.oldest) is null then interval '0'
                else greatest(v_now - greatest(pg_catalog.min(r.oldest), v_earliest), interval '0') end
      from (
        -- tasks_finished, index-only: the finished rows of the minutes written
        -- (date_bin inline: _minute_of, pinning its search_path, is not inlined and would cost a call a row)
        select t.queue, pg_catalog.date_bin(interval '1 minute', t.finished_at, timestamptz '2000-01-01 00:00:00+00') as minute,
               pg_catalog.count(*) as finished,
               pg_catalog.count(*) filter (where t.status in ('failed', 'dead')) as failed,
               0::bigint as depth, null::timestamptz as oldest
          from conductor.tasks t
         where t.finished_at >= (select pg_catalog.min(w) from pg_catalog.unnest(v_written) w)
           and t.finished_at < v_minute + interval '1 minute'
         group by 1, 2
        union all
        -- tasks_ready_by_queue: the backlog now, for the live minute only
        select t.queue, v_minute, 0::bigint, 0::bigint, pg_catalog.count(*), pg_catalog.min(t.run_at)
          from conductor.tasks t
         where v_live and t.status = 'queued' and t.run_at <= v_now
         group by t.queue) r
     where r.minute = any (v_written)
     group by r.queue, r.minute;
  end if;

  -- kept: the minutes from retain_samples before the current minute on, which holds every
  -- minute a backfill writes (so no call deletes what it, or another, is writing)
  delete from conductor.queue_samples q where q.minute < conductor._minute_of(v_now) - v_keep;
  delete from conductor.sample_minutes m where m.minute < conductor._minute_of(v_now) - v_keep;

  return coalesce(pg_catalog.cardinality(v_written), 0);
end
$$;

comment on function conductor.sample_queues() is
$$Writes the last whole minute (the one before conductor.now()'s) into conductor.sample_minutes
and conductor.queue_samples, with every whole minute since the last minute written (a day back
at most, or settings.retain_samples when shorter), and answers how many minutes it wrote (0:
another sampler wrote them). Per queue and minute: finished (tasks whose finished_at falls in
the minute, whatever their final status) and failed (of them failed or dead), read from the
index tasks_finished; for the last minute also depth (ready tasks: queued and due) and
oldest_age (the backlog age, as stats() reads them), at the time of the call. Missed minutes
get their finished counts (of the tasks retention kept) but no depth or age (NULL: nobody read
them then). A queue that finished nothing and had nothing ready gets no row. Deletes the
samples of minutes that began more than settings.retain_samples (2 days) before the current
minute. Each minute is written once
however many callers run at once: a caller waits on the minutes another is writing, then skips
them. Meant for one caller a minute (the maintenance role's leader duty); raises nothing.$$;

revoke execute on function conductor.sample_queues() from public;
grant execute on function conductor.sample_queues() to conductor_worker, conductor_admin;

create or replace function conductor.queue_series(
  since timestamptz,
  until timestamptz default null,
  step  interval default interval '1 minute',
  queues text[] default null)
  returns table (
    queue      text,
    at         timestamptz,
    finished   bigint,
    failed     bigint,
    depth      bigint,
    oldest_age interval,
    minutes    integer)
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
  -- the planner's estimate of the queues x steps join is far above what it returns (a
  -- thousand rows), enough to JIT-compile it: half a second on each custom plan
  set jit = off
as $$
declare
  v_origin constant timestamptz := timestamptz '2000-01-01 00:00:00+00';
  v_until  timestamptz := coalesce(queue_series.until, conductor.now());
  v_first  timestamptz;
begin
  if queue_series.since is null then
    raise exception 'invalid since NULL: the start of the range'
      using errcode = 'QC106';
  end if;
  perform conductor._check_time(queue_series.since, 'since', null);
  perform conductor._check_time(v_until, 'until', null);
  if queue_series.step is null or queue_series.step < interval '1 minute' or queue_series.step > interval '1 day'
     or pg_catalog.date_part('month', queue_series.step) <> 0 or pg_catalog.date_part('year', queue_series.step) <> 0
     or pg_catalog.mod(extract(epoch from queue_series.step), 60) <> 0 then
    raise exception 'invalid step %: whole minutes, from 1 minute to 1 day', coalesce(queue_series.step::text, 'NULL')
      using errcode = 'QC106';
  end if;
  if v_until <= queue_series.since then
    raise exception 'invalid range: since % is not before until %', queue_series.since, v_until
      using errcode = 'QC106';
  end if;
  if extract(epoch from v_until - queue_series.since) / extract(epoch from queue_series.step) > 1440 then
    raise exception 'invalid range: % to % by % is over 1440 points', queue_series.since, v_until, queue_series.step
      using errcode = 'QC106', hint = 'Take a longer step or a shorter range.';
  end if;
  v_first := pg_catalog.date_bin(queue_series.step, queue_series.since, v_origin);

  return query
  with buckets as (
    select g.at
      from pg_catalog.generate_series(v_first, v_until, queue_series.step) g (at)
     where g.at < v_until
  ), sampled as (
    select pg_catalog.date_bin(queue_series.step, m.minute, v_origin) as at,
           pg_catalog.count(*) as minutes, pg_catalog.count(m.sampled_at) as live
      from conductor.sample_minutes m
     where m.minute >= v_first and m.minute < v_until
     group by 1
  ), sums as (
    select s.queue, pg_catalog.date_bin(queue_series.step, s.minute, v_origin) as at,
           pg_catalog.sum(s.finished) as finished, pg_catalog.sum(s.failed) as failed,
           pg_catalog.max(s.depth) as depth, pg_catalog.max(s.oldest_age) as oldest_age
      from conductor.queue_samples s
     where (queue_series.queues is null or s.queue = any (queue_series.queues))
       and s.minute >= v_first and s.minute < v_until
     group by 1, 2
  ), queues as (
    select n.name from pg_catalog.unnest(queue_series.queues) n (name) where n.name is not null
    union
    select x.queue from sums x
  )
  select q.name, b.at,
         case when m.minutes > 0 then coalesce(x.finished, 0)::bigint end,
         case when m.minutes > 0 then coalesce(x.failed, 0)::bigint end,
         case when m.live > 0 then coalesce(x.depth, 0)::bigint end,
         case when m.live > 0 then coalesce(x.oldest_age, interval '0') end,
         coalesce(m.minutes, 0)::integer
    from queues q
   cross join buckets b
    left join sampled m on m.at = b.at
    left join sums x on x.queue = q.name and x.at = b.at
   order by q.name, b.at;
end
$$;

comment on function conductor.queue_series(timestamptz, timestamptz, interval, text[]) is
$$The points of a chart of the queues over time, from conductor.queue_samples: one row per queue
(each of queues, else every queue with a sample in the range) and per step (1 minute; whole
minutes up to 1 day) from since (rounded down to a multiple of step since 2000-01-01 UTC) to
until (conductor.now() when NULL), by queue and time: at (the start of the step), finished and
failed (the sums over the step's sampled minutes; NULL when no minute of the step was sampled),
depth and oldest_age (the largest read in the step; NULL when no minute of the step was sampled
live, e.g. only backfilled), minutes (how many minutes of the step were sampled). A sampled
minute without a row for the queue counts 0. Raises QC106 for a since or until outside the
engine's times, a step that is not whole minutes from 1 minute to 1 day, since not before until,
or over 1440 points. Reads a snapshot; takes no locks; any number of callers.$$;

revoke execute on function conductor.queue_series(timestamptz, timestamptz, interval, text[]) from public;
grant execute on function conductor.queue_series(timestamptz, timestamptz, interval, text[])
  to conductor_client, conductor_worker, conductor_admin;

commit;
