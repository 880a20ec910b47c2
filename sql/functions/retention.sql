-- Deploy conductor:functions/retention to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/retention@v0.2.0.sql)
--
-- Retention configured once, applied in batches, and the handler log lines of
-- an attempt (issue 17).
--
--   conductor.apply_retention(batch) -> (what, deleted)     worker, admin
--   conductor.save_log(attempt_id, lines, dropped)          worker, admin
--   conductor._retention_cutoff(now, keep) -> timestamptz  (helper, no grants)
--   conductor._kind_retention(keep, owner, floor) -> interval
--                                   a kind's retention as applied (helper, no grants)
--
-- Tables: conductor.settings (retain_succeeded, retain_failed, retain_events,
-- max_log_bytes, min_retention), conductor.kinds (retain_succeeded,
-- retain_failed, owner), conductor.workers (owner, for save_log), and for
-- deletions those of prune (through its helpers conductor._prune_events and
-- conductor._delete_tasks of functions/prune): conductor.tasks (read via
-- tasks_finished, tasks_pkey and tasks_run), attempts (and attempt_logs by
-- cascade), steps, schedule_fires, events, exclusive_locks; conductor.attempt_logs (save_log).
--
-- What apply_retention deletes: whole runs (a root, id = root_id, and every
-- task whose root_id it is) whose every task finished, the last of them
-- longer ago than the run's retention: the root's kind's retain_succeeded when
-- the root succeeded, its retain_failed when it did not (failed, dead,
-- timed_out, expired, cancelled), else (kind NULL or no kinds row) the settings'; a
-- NULL there keeps such runs forever. And events older than retain_events that
-- no waiting task waits for, as prune deletes them. And the rows of exclusive()
-- names made more than a day ago that no transaction holds
-- (conductor._forget_exclusive_locks of functions/bus, exclusive_locks).
--
-- The floor (issue 25): a kind's retention counts as at least
-- settings.min_retention (1 day) unless an admin wrote the kind's row
-- (kinds.owner is a member of conductor_admin). configure_kind refuses less
-- from any other login, so this only matters for rows it never checked (from
-- v0.2.0, whose owner is NULL) and rows written before an admin raised the
-- floor: a worker login can never make apply_retention delete a run, its own
-- application's or another's, that finished less than the floor ago. The
-- settings' own retain_* are the admin's and apply as they are. prune (no
-- floor) stays an admin's.
--
-- Finding them: one range scan of tasks_finished (finished_at) up to the
-- newest cutoff any retention could give (now less the shortest retention of
-- the settings and every kind), oldest first, stopping at batch runs: each run
-- is found once, at its last finished task (probes of tasks_pkey for the root,
-- tasks_run for the others). It reads no more history than prune with the
-- same cutoff: runs kept (unfinished, or of a retention not yet reached) are
-- stepped over in the index, as prune steps over tasks it keeps.
--
-- Lock order: event rows and their advisory locks, tried (_prune_events); then
-- the task rows of the chosen runs (FOR UPDATE SKIP LOCKED: never waits); then
-- attempts, steps, fires, as prune. A run one of whose tasks another
-- transaction holds (a retry, a cancel) is left whole for a later call, and
-- each run is checked again under its locks (all finished, none too recent),
-- so a run retried meanwhile stays. Any number of calls may run at once
-- without waiting on each other or on the hot path; the maintenance role
-- calls it under a leader lock anyway, in a loop until every count is 0.
--
-- save_log: one row of conductor.attempt_logs per attempt, bounded by
-- settings.max_log_bytes (the size of the lines' text form: '[' , the lines
-- joined by ', ', ']'); a second call appends to the stored lines. Only into an
-- attempt of a worker the caller registered (conductor.workers.owner, through
-- conductor._check_owner: QC208; an admin writes into any), while the attempt
-- runs and for an hour after it ended (QC204 later): a worker sends an
-- attempt's lines before its outcome, and lines a handler logs after its
-- time limit, its cancellation or a lost lease when the handler returns
-- (pyconductor.tasklog); the hour covers such a handler, or an outage of the
-- database, of up to an hour. Lock: the attempt's log row (FOR UPDATE), so two
-- calls for one attempt append in turn.

begin;
set local role conductor_owner;

create or replace function conductor._retention_cutoff(now timestamptz, keep interval) returns timestamptz
  language sql stable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  -- NULL keeps forever; a retention reaching back before 0001-01-02 (a value an admin
  -- may store, over 5000 years) keeps everything rather than overflowing (22008)
  select case
           when _retention_cutoff.keep is null then null
           when _retention_cutoff.keep > interval '5000 years' then timestamptz '-infinity'
           when _retention_cutoff.now - _retention_cutoff.keep < timestamptz '0001-01-02 00:00:00+00'
             then timestamptz '-infinity'
           else _retention_cutoff.now - _retention_cutoff.keep
         end
$$;

comment on function conductor._retention_cutoff(timestamptz, interval) is
$$now - keep: what finished before it is due for deletion. NULL when keep is NULL (keep
forever); -infinity (nothing is due) when keep reaches back before 0001-01-02 UTC.$$;

revoke execute on function conductor._retention_cutoff(timestamptz, interval) from public;

-- The floor, one rule: read by apply_retention wherever it reads a kind's retention.
create or replace function conductor._kind_retention(keep interval, owner text, floor interval)
  returns interval
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select case
           when _kind_retention.keep is null or _kind_retention.keep >= _kind_retention.floor
             then _kind_retention.keep
           -- an admin's row keeps what the admin gave (by oid: a dropped role is no admin)
           when exists (select from pg_catalog.pg_roles r
                         where r.rolname = _kind_retention.owner
                           and pg_catalog.pg_has_role(r.oid, 'conductor_admin', 'member'))
             then _kind_retention.keep
           else _kind_retention.floor
         end
$$;

comment on function conductor._kind_retention(interval, text, interval) is
$$A kind's retain_succeeded or retain_failed (keep) as apply_retention applies it: keep when
NULL (the settings') or at least floor (conductor.settings.min_retention), or when owner
(conductor.kinds.owner) is a role that is a member of conductor_admin; else floor. A row
from before v0.3.0 (owner NULL) or from a login that is not (or no longer) an admin never
keeps a run for less than the floor.$$;

revoke execute on function conductor._kind_retention(interval, text, interval) from public;

-- The planner settings, and OFFSET 0 in the subqueries (each a probe per row,
-- never a join), keep every statement on index probes however stale the
-- statistics (a join over all history would read it whole at each call): the
-- candidate scan walks tasks_finished in order and stops at batch runs.
create or replace function conductor.apply_retention(batch integer default 1000)
  returns table (what text, deleted bigint)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set enable_seqscan = off
  set enable_hashjoin = off
  set enable_mergejoin = off
  set enable_sort = off
  set jit = off
as $$
declare
  v_now        timestamptz := conductor.now();
  v_set        conductor.settings;
  v_scan_until timestamptz;
  v_events     bigint := 0::bigint;
  v_roots      bigint[];
  v_locked     bigint[];
  v_runs       bigint[];
  v_classes    text[];
  v_ids        bigint[];
begin
  if apply_retention.batch is null or apply_retention.batch < 1 or apply_retention.batch > 1000000 then
    raise exception 'invalid batch %: between 1 and 1000000', coalesce(apply_retention.batch::text, 'NULL')
      using errcode = 'QC106';
  end if;

  select s.* into v_set from conductor.settings s where s.one;

  -- Events, as prune deletes them.
  if conductor._retention_cutoff(v_now, v_set.retain_events) is not null then
    v_events := conductor._prune_events(conductor._retention_cutoff(v_now, v_set.retain_events),
                                        apply_retention.batch);
  end if;

  -- The newest cutoff of any run: nothing finished after it can be due.
  v_scan_until := conductor._retention_cutoff(v_now,
    (select pg_catalog.min(k.keep)
       from (select v_set.retain_succeeded union all select v_set.retain_failed
             union all select conductor._kind_retention(k.retain_succeeded, k.owner, v_set.min_retention)
                         from conductor.kinds k
             union all select conductor._kind_retention(k.retain_failed, k.owner, v_set.min_retention)
                         from conductor.kinds k) k (keep)));

  if v_scan_until is not null then
    -- Candidate runs, oldest first: each at its last finished task t (no task of the
    -- run unfinished or finished later; ties by id), t before the run's cutoff.
    select pg_catalog.array_agg(c.root_id) into v_roots
      from (select t.root_id
              from conductor.tasks t
             cross join lateral (  -- offset 0: a probe of tasks_pkey per row, never a join over history
               select r.id, r.kind, r.status, r.finished_at, r.dedupe_until, r.dedupe_states
                 from conductor.tasks r where r.id = t.root_id offset 0) r
              left join lateral (
               select conductor._kind_retention(k.retain_succeeded, k.owner, v_set.min_retention) as retain_succeeded,
                      conductor._kind_retention(k.retain_failed, k.owner, v_set.min_retention) as retain_failed
                 from conductor.kinds k where k.kind = r.kind offset 0) k on true
             where t.finished_at < v_scan_until
               and r.finished_at is not null
               and (r.id = t.id or r.finished_at < t.finished_at
                    or (r.finished_at = t.finished_at and r.id < t.id))
               and not exists (select from conductor.tasks o
                                where o.root_id = t.root_id and o.parent_id is not null and o.id <> t.id
                                  and (o.finished_at is null or o.finished_at > t.finished_at
                                       or (o.finished_at = t.finished_at and o.id > t.id))
                               offset 0)
               -- no task of the run holds its dedupe_key for a window not yet over (issue 30)
               and not coalesce(r.dedupe_until > v_now and pg_catalog.isfinite(r.dedupe_until)
                                and r.status = any (r.dedupe_states), false)
               and not exists (select from conductor.tasks o
                                where o.root_id = t.root_id and o.parent_id is not null
                                  and o.dedupe_until > v_now and pg_catalog.isfinite(o.dedupe_until)
                                  and o.status = any (o.dedupe_states)
                               offset 0)
               and t.finished_at < conductor._retention_cutoff(v_now,
                     case when r.status = 'succeeded'
                          then coalesce(k.retain_succeeded, v_set.retain_succeeded)
                          else coalesce(k.retain_failed, v_set.retain_failed) end)
             order by t.finished_at
             limit apply_retention.batch) c;
  end if;

  if v_roots is not null then
    -- Hold every task of those runs; rows others hold are skipped (never waits).
    select pg_catalog.array_agg(l.id) into v_locked
      from (select t.id
              from conductor.tasks t
             where t.id = any (v_roots)
                or (t.root_id = any (v_roots) and t.parent_id is not null)
               for update of t skip locked) l;

    -- Checked again under the locks, in a new snapshot: every task of the run held
    -- here and finished before the run's cutoff (a run retried meanwhile stays).
    select pg_catalog.array_agg(r.id), pg_catalog.array_agg(w.class)
      into v_runs, v_classes
      from pg_catalog.unnest(v_roots) c (root_id)
     cross join lateral (
       select r.id, r.kind, r.status, r.finished_at
         from conductor.tasks r where r.id = c.root_id offset 0) r
      left join lateral (
       select conductor._kind_retention(k.retain_succeeded, k.owner, v_set.min_retention) as retain_succeeded,
              conductor._kind_retention(k.retain_failed, k.owner, v_set.min_retention) as retain_failed
         from conductor.kinds k where k.kind = r.kind offset 0) k on true
      cross join lateral (
        select case when r.status = 'succeeded' then 'succeeded_runs' else 'failed_runs' end as class,
               conductor._retention_cutoff(v_now,
                 case when r.status = 'succeeded'
                      then coalesce(k.retain_succeeded, v_set.retain_succeeded)
                      else coalesce(k.retain_failed, v_set.retain_failed) end) as cutoff) w
     where r.id = any (v_locked)
       and r.finished_at < w.cutoff
       and not exists (select from conductor.tasks o
                        where o.root_id = r.id and o.parent_id is not null
                          and not (o.id = any (v_locked) and o.finished_at < w.cutoff)
                       offset 0);
  end if;

  if v_runs is not null then
    select pg_catalog.array_agg(t.id) into v_ids
      from conductor.tasks t
     where t.id = any (v_runs)
        or (t.root_id = any (v_runs) and t.parent_id is not null);
    perform conductor._delete_tasks(v_ids);
  end if;

  what := 'succeeded_runs';
  deleted := coalesce((select pg_catalog.count(*) from pg_catalog.unnest(v_classes) c where c = 'succeeded_runs'), 0);
  return next;
  what := 'failed_runs';
  deleted := coalesce((select pg_catalog.count(*) from pg_catalog.unnest(v_classes) c where c = 'failed_runs'), 0);
  return next;
  what := 'events';
  deleted := v_events;
  return next;
  -- exclusive() names nobody used for a day (functions/bus): a statement of its own, and
  -- the last, so an exclusive() of a name being forgotten waits for nothing longer
  what := 'exclusive_locks';
  deleted := conductor._forget_exclusive_locks(interval '1 day', apply_retention.batch)::bigint;
  return next;
end
$$;

comment on function conductor.apply_retention(integer) is
$$Deletes what retention says is due, at most batch (1000) runs and batch events per call,
and answers four rows (what, deleted): 'succeeded_runs' and 'failed_runs' (runs deleted
whole: the root and every task of its run, with their attempts, log lines, steps and
schedule fires), 'events' and 'exclusive_locks' (the rows of exclusive() names made more
than a day ago that no transaction holds, at most batch). A run is due when every task of it finished, the last one
longer ago than its retention: for a root that succeeded, the root's kind's
retain_succeeded (configure_kind), else conductor.settings.retain_succeeded (7 days); for
one that failed, is dead, timed out or was cancelled, retain_failed likewise (30 days); a
NULL retention keeps such runs forever. A kind's retention counts as at least
conductor.settings.min_retention (1 day) unless a member of conductor_admin wrote the kind's
row (conductor.kinds.owner; conductor._kind_retention): whoever calls it, no run goes
earlier than the floor because a login that is not an admin (or v0.2.0) stored less. A run with an unfinished task is never deleted,
however old its root, nor one with a task holding its dedupe_key for a dedupe_window not yet
over (dedupe_until after now: the key's arbiter until then). Events emitted longer ago than settings.retain_events (30 days) go
unless a task waits for them (as prune). Oldest runs first; call it again until every
count is 0. Reads finished tasks through the index tasks_finished up to the newest
cutoff only. Locks the rows it deletes, skipping rows others hold (a run with such a row
stays whole for a later call), so concurrent calls and the hot path never wait on it.
Raises QC106 for a batch outside 1..1000000.$$;

revoke execute on function conductor.apply_retention(integer) from public;
grant execute on function conductor.apply_retention(integer) to conductor_worker, conductor_admin;

create or replace function conductor.save_log(attempt_id bigint, lines jsonb, dropped integer default 0)
  returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now        timestamptz := conductor.now();
  v_worker_id  text;
  v_finished   timestamptz;
  v_registered boolean;
  v_owner      text;
  v_max        integer;
  v_all        jsonb;
  v_kept       jsonb;
  v_nkept      bigint;
  v_n          bigint;
begin
  if save_log.lines is null or pg_catalog.jsonb_typeof(save_log.lines) <> 'array' then
    raise exception 'invalid lines: a JSON array of log records, got %',
      coalesce(pg_catalog.jsonb_typeof(save_log.lines), 'SQL NULL')
      using errcode = 'QC106', hint = 'Pass [{"at": ..., "level": ..., "logger": ..., "message": ...}, ...].';
  end if;
  if save_log.dropped is null or save_log.dropped < 0 then
    raise exception 'invalid dropped %: 0 or more', coalesce(save_log.dropped::text, 'NULL')
      using errcode = 'QC106';
  end if;
  select a.worker_id, a.finished_at, w.id is not null, w.owner
    into v_worker_id, v_finished, v_registered, v_owner
    from conductor.attempts a
    left join conductor.workers w on w.id = a.worker_id
   where a.id = save_log.attempt_id;
  if not found then
    raise exception 'attempt % does not exist', coalesce(save_log.attempt_id::text, 'NULL')
      using errcode = 'QC203';
  end if;
  -- only the caller's own worker's attempts (an admin's: any)
  if not v_registered and not conductor._caller_is_admin() then
    raise exception 'attempt % is of worker %, which is not registered: only a login''s own registered workers save their attempts'' log lines',
      save_log.attempt_id, conductor._echo(v_worker_id)
      using errcode = 'QC208',
            hint = 'Register the worker (register_worker) before it claims, or have an admin save the lines.';
  end if;
  perform conductor._check_owner('worker', v_worker_id, v_owner);
  if v_finished < v_now - interval '1 hour' then
    raise exception 'attempt % ended at %, over an hour ago: its log lines can no longer be added',
      save_log.attempt_id, v_finished
      using errcode = 'QC204',
            hint = 'A worker sends an attempt''s lines before its outcome, and late lines within the hour.';
  end if;

  select s.max_log_bytes into v_max from conductor.settings s where s.one;

  -- the attempt's row, held: a second call appends after the first
  insert into conductor.attempt_logs as l (attempt_id, lines, dropped)
  values (save_log.attempt_id, '[]', 0)
  on conflict on constraint attempt_logs_pkey do nothing;
  select l.lines || save_log.lines into v_all
    from conductor.attempt_logs l where l.attempt_id = save_log.attempt_id
     for update;

  -- the longest prefix whose text form ('[' || lines joined by ', ' || ']') fits
  select coalesce(pg_catalog.jsonb_agg(e.line order by e.n) filter (where e.size <= v_max), '[]'),
         pg_catalog.count(*) filter (where e.size <= v_max),
         pg_catalog.count(*)
    into v_kept, v_nkept, v_n
    from (select x.line, x.n,
                 2 * x.n + pg_catalog.sum(pg_catalog.octet_length(x.line::text)) over (order by x.n) as size
            from pg_catalog.jsonb_array_elements(v_all) with ordinality x (line, n)) e;

  update conductor.attempt_logs l
     set lines = v_kept,
         dropped = least(2147483647, l.dropped::bigint + save_log.dropped + (v_n - v_nkept))
   where l.attempt_id = save_log.attempt_id;
end
$$;

comment on function conductor.save_log(bigint, jsonb, integer) is
$$Stores the log records a handler emitted during attempt attempt_id: lines, a JSON array
of {"at", "level", "logger", "message"}, appended to what earlier calls stored for the
attempt (which may have finished already). Keeps the longest prefix of the stored and new
lines whose text form ('[', the lines joined by ', ', ']') is at most
conductor.settings.max_log_bytes (64 KiB; 0 keeps none), and adds the lines left out, and
dropped (the records the caller already left out), to the attempt's dropped count. Only
the login that registered the attempt's worker (conductor.workers.owner) or a member of
conductor_admin writes into an attempt: QC208 for another login's worker, or a worker that
is not registered (unless the caller is an admin); a worker registered before v0.3.0 (owner
NULL) is anyone's. Lines are taken while the attempt runs and for one hour after it ended
(QC204 later). Raises QC106 when lines is not a JSON array or dropped is NULL or negative,
QC203 when the attempt does not exist. Locks the attempt's log row; many attempts at once.$$;

revoke execute on function conductor.save_log(bigint, jsonb, integer) from public;
grant execute on function conductor.save_log(bigint, jsonb, integer) to conductor_worker, conductor_admin;

commit;
