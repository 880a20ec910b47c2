-- Deploy conductor:functions/bulk to pg
--
-- Bulk actions by filter (issue 29): an operator retries or cancels every task
-- a filter matches, after seeing how many that is. Admin only.
--
--   conductor.preview_matching(action, filter...) -> (matching, sample_ids)
--        how many tasks the action would take now, and the newest few ids
--   conductor.retry_matching(filter..., expected, keep_steps, batch) -> integer
--   conductor.cancel_matching(filter..., expected, batch) -> integer
--        act on at most batch matching tasks in one statement and return how
--        many they changed; the caller calls again until 0
--   conductor._bulk_statuses(action, filter...)   the filter's rules: refuses
--        an empty filter, an unknown action or status, a status the action
--        cannot take; returns the statuses the action takes
--   conductor._matches_filter(task, filter...)   the filter beyond status
--
-- The filter: queue, kind, status (NULL: every status the action takes: retry
-- conductor.retryable_statuses(), cancel conductor.unfinished_statuses()),
-- enqueued_after/enqueued_before and finished_after/finished_before (a half-open
-- range [after, before) on enqueued_at, finished_at), error_contains (a
-- substring, ignoring case, of the error of the task's last attempt). NULL
-- means "any"; at least one must be given.
--
-- What happens to each task is retry's and cancel's own: each matching task is
-- passed to conductor.retry() or conductor.cancel(), so their rules (dedupe
-- conflicts, a run's stopped descendants, the cancelled tree, the attempts
-- closed, the wake-ups) hold unchanged. Tasks carry no owner: retry and cancel
-- let any client act on any task, and these are granted to conductor_admin only.
--
-- Races: the matching rows are locked newest first (descending id, children
-- before parents, the order retry and cancel lock in) with SKIP LOCKED, and the
-- filter is evaluated again on each row once it is locked (READ COMMITTED's
-- recheck of a locked row), so a task a worker holds (claiming it) is left for a
-- later call, and one that stopped matching since the preview is not touched.
-- retry then locks a run's stopped descendants and cancel the task's tree,
-- waiting, as they do when called alone.
--
-- Tables: conductor.tasks, conductor.attempts (read: the last attempt's error).

begin;
set local role conductor_owner;

create or replace function conductor._bulk_statuses(
  action          text,
  status          text,
  queue           text,
  kind            text,
  enqueued_after  timestamptz,
  enqueued_before timestamptz,
  finished_after  timestamptz,
  finished_before timestamptz,
  error_contains  text
) returns conductor.task_status[]
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_takes conductor.task_status[];
begin
  v_takes := case _bulk_statuses.action
               when 'retry' then conductor.retryable_statuses()
               when 'cancel' then conductor.unfinished_statuses()
             end;
  if v_takes is null then
    raise exception 'unknown bulk action %: retry or cancel', coalesce(pg_catalog.quote_literal(_bulk_statuses.action), 'NULL')
      using errcode = 'QC106';
  end if;
  if pg_catalog.num_nulls(_bulk_statuses.status, _bulk_statuses.queue, _bulk_statuses.kind,
               _bulk_statuses.enqueued_after, _bulk_statuses.enqueued_before,
               _bulk_statuses.finished_after, _bulk_statuses.finished_before,
               _bulk_statuses.error_contains) = 8 then
    raise exception 'an empty filter matches every task: give a queue, kind, status, time range or error text'
      using errcode = 'QC209',
            hint = 'To act on every task the action can take, name its status.';
  end if;
  if _bulk_statuses.error_contains = '' then
    raise exception 'an empty error_contains matches every error: give the text to look for, or NULL'
      using errcode = 'QC106';
  end if;
  if _bulk_statuses.enqueued_after >= _bulk_statuses.enqueued_before
     or _bulk_statuses.finished_after >= _bulk_statuses.finished_before then
    raise exception 'an empty time range: each after must be earlier than its before'
      using errcode = 'QC106';
  end if;
  if _bulk_statuses.status is null then
    return v_takes;
  end if;
  if conductor._task_status(_bulk_statuses.status) <> all (v_takes) then
    raise exception 'a % task cannot be %: % takes %', _bulk_statuses.status,
      case _bulk_statuses.action when 'retry' then 'retried' else 'cancelled' end,
      _bulk_statuses.action, pg_catalog.array_to_string(v_takes, ', ')
      using errcode = 'QC204';
  end if;
  return array[_bulk_statuses.status::conductor.task_status];
end
$$;

comment on function conductor._bulk_statuses(text, text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text) is
$$The statuses the bulk action ('retry' or 'cancel') takes under the filter: status alone,
or every status the action takes (conductor.retryable_statuses(), conductor.unfinished_statuses())
when it is NULL. Raises QC209 for an empty filter (every argument NULL), QC105 for an unknown
status, QC204 for a status the action cannot take, QC106 for an unknown action, an empty
error_contains or a time range whose after is not earlier than its before.$$;

revoke execute on function conductor._bulk_statuses(text, text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text) from public;

create or replace function conductor._matches_filter(
  task            conductor.tasks,
  queue           text,
  kind            text,
  enqueued_after  timestamptz,
  enqueued_before timestamptz,
  finished_after  timestamptz,
  finished_before timestamptz,
  error_contains  text
) returns boolean
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  return (_matches_filter.queue is null or (_matches_filter.task).queue = _matches_filter.queue)
     and (_matches_filter.kind is null or (_matches_filter.task).kind = _matches_filter.kind)
     and (_matches_filter.enqueued_after is null or (_matches_filter.task).enqueued_at >= _matches_filter.enqueued_after)
     and (_matches_filter.enqueued_before is null or (_matches_filter.task).enqueued_at < _matches_filter.enqueued_before)
     and (_matches_filter.finished_after is null or (_matches_filter.task).finished_at >= _matches_filter.finished_after)
     and (_matches_filter.finished_before is null or (_matches_filter.task).finished_at < _matches_filter.finished_before)
     and (_matches_filter.error_contains is null
          or exists (select from conductor.attempts a
                      where a.id = (_matches_filter.task).attempt_id
                        and pg_catalog.strpos(pg_catalog.lower(a.error), pg_catalog.lower(_matches_filter.error_contains)) > 0));
end
$$;

comment on function conductor._matches_filter(conductor.tasks, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text) is
$$Whether task matches a bulk filter beyond its status (each NULL argument matches any
task): its queue, its kind, enqueued_at in [enqueued_after, enqueued_before), finished_at in
[finished_after, finished_before) (a task with no finished_at is outside any finished range),
error_contains a substring, ignoring case, of the error of its last attempt (tasks.attempt_id).$$;

revoke execute on function conductor._matches_filter(conductor.tasks, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text) from public;

create or replace function conductor.preview_matching(
  action          text,
  status          text default null,
  queue           text default null,
  kind            text default null,
  enqueued_after  timestamptz default null,
  enqueued_before timestamptz default null,
  finished_after  timestamptz default null,
  finished_before timestamptz default null,
  error_contains  text default null,
  sample          integer default 20
) returns table (matching bigint, sample_ids bigint[])
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_statuses conductor.task_status[] := conductor._bulk_statuses(
    preview_matching.action, preview_matching.status, preview_matching.queue, preview_matching.kind,
    preview_matching.enqueued_after, preview_matching.enqueued_before,
    preview_matching.finished_after, preview_matching.finished_before, preview_matching.error_contains);
begin
  if preview_matching.sample is null or preview_matching.sample < 0 or preview_matching.sample > 1000 then
    raise exception 'invalid sample %: between 0 and 1000', preview_matching.sample using errcode = 'QC106';
  end if;
  return query
  select pg_catalog.count(*),
         (pg_catalog.array_agg(m.id order by m.id desc))[1:preview_matching.sample]
    from conductor.tasks m
   where m.status = any (v_statuses)
     and conductor._matches_filter(m, preview_matching.queue, preview_matching.kind,
           preview_matching.enqueued_after, preview_matching.enqueued_before,
           preview_matching.finished_after, preview_matching.finished_before, preview_matching.error_contains);
end
$$;

comment on function conductor.preview_matching(text, text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, integer) is
$$How many tasks the bulk action ('retry' or 'cancel') would take under the filter now
(matching), and the ids of the newest sample of them (newest first; NULL when none match).
The filter as retry_matching and cancel_matching take it: queue, kind, status (NULL: every
status the action takes), enqueued_at in [enqueued_after, enqueued_before), finished_at in
[finished_after, finished_before), error_contains a substring, ignoring case, of the last
attempt's error; at least one given. Reads only, locks nothing. Raises QC209 for an empty
filter, QC105 for an unknown status, QC204 for a status the action cannot take, QC106 for an
unknown action, an empty error_contains, an empty time range or a sample outside 0-1000.$$;

revoke execute on function conductor.preview_matching(text, text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, integer) from public;
grant execute on function conductor.preview_matching(text, text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, integer) to conductor_admin;

-- The checks both actions make before they change anything: the batch's bound, and that
-- the filter matches no more tasks than the caller confirmed.
create or replace function conductor._check_bulk_call(
  action          text,
  statuses        conductor.task_status[],
  queue           text,
  kind            text,
  enqueued_after  timestamptz,
  enqueued_before timestamptz,
  finished_after  timestamptz,
  finished_before timestamptz,
  error_contains  text,
  expected        bigint,
  batch           integer
) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_matching bigint;
begin
  if _check_bulk_call.batch is null or _check_bulk_call.batch < 1 or _check_bulk_call.batch > 10000 then
    raise exception 'invalid batch %: between 1 and 10000', _check_bulk_call.batch using errcode = 'QC106';
  end if;
  if _check_bulk_call.expected is null then
    return;
  end if;
  select pg_catalog.count(*) into v_matching
    from conductor.tasks m
   where m.status = any (_check_bulk_call.statuses)
     and conductor._matches_filter(m, _check_bulk_call.queue, _check_bulk_call.kind,
           _check_bulk_call.enqueued_after, _check_bulk_call.enqueued_before,
           _check_bulk_call.finished_after, _check_bulk_call.finished_before, _check_bulk_call.error_contains);
  if v_matching > _check_bulk_call.expected then
    raise exception 'the filter matches % tasks now, more than the % expected: nothing was done', v_matching, _check_bulk_call.expected
      using errcode = 'QC210',
            hint = pg_catalog.format('Preview again and confirm the new count before you %s them.', _check_bulk_call.action);
  end if;
end
$$;

comment on function conductor._check_bulk_call(text, conductor.task_status[], text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, bigint, integer) is
$$Raises QC106 for a batch outside 1-10000, and QC210 when expected is given and the filter
(statuses, then conductor._matches_filter's arguments) matches more tasks than expected.$$;

revoke execute on function conductor._check_bulk_call(text, conductor.task_status[], text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, bigint, integer) from public;

create or replace function conductor.retry_matching(
  status          text default null,
  queue           text default null,
  kind            text default null,
  enqueued_after  timestamptz default null,
  enqueued_before timestamptz default null,
  finished_after  timestamptz default null,
  finished_before timestamptz default null,
  error_contains  text default null,
  expected        bigint default null,
  keep_steps      boolean default true,
  batch           integer default 1000
) returns integer
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_statuses conductor.task_status[] := conductor._bulk_statuses(
    'retry', retry_matching.status, retry_matching.queue, retry_matching.kind,
    retry_matching.enqueued_after, retry_matching.enqueued_before,
    retry_matching.finished_after, retry_matching.finished_before, retry_matching.error_contains);
  v_retried integer;
begin
  perform conductor._check_bulk_call('retry', v_statuses, retry_matching.queue, retry_matching.kind,
    retry_matching.enqueued_after, retry_matching.enqueued_before,
    retry_matching.finished_after, retry_matching.finished_before, retry_matching.error_contains,
    retry_matching.expected, retry_matching.batch);

  -- lock order: matching rows newest first, SKIP LOCKED; then retry's own locks
  select pg_catalog.count(conductor.retry(m.id, retry_matching.keep_steps))::integer into v_retried
    from (select t.id from conductor.tasks t
           where t.status = any (v_statuses)
             and conductor._matches_filter(t, retry_matching.queue, retry_matching.kind,
                   retry_matching.enqueued_after, retry_matching.enqueued_before,
                   retry_matching.finished_after, retry_matching.finished_before, retry_matching.error_contains)
           order by t.id desc
           limit retry_matching.batch
             for update skip locked) m;
  return v_retried;
end
$$;

comment on function conductor.retry_matching(text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, bigint, boolean, integer) is
$$Retries (conductor.retry(id, keep_steps), its rules unchanged) at most batch (1-10000,
default 1000) of the tasks the filter matches, newest first, in one statement; returns how
many it retried. Call again until it returns 0: a retried task no longer matches. The filter
is preview_matching's (status NULL: failed, cancelled, timed_out, expired and dead tasks). Locks the
matching rows FOR UPDATE SKIP LOCKED and evaluates the filter again on each locked row: a row
another transaction holds is left for a later call, one that stopped matching is not
touched. Raises as preview_matching does for the filter; QC106 for a batch outside
1-10000; QC210 when expected is given and the filter now matches more tasks than expected
(the caller confirmed fewer); retry's own errors (QC205: a task's dedupe_key is held by an
unfinished task). When it raises, nothing changes. Admin only.$$;

revoke execute on function conductor.retry_matching(text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, bigint, boolean, integer) from public;
grant execute on function conductor.retry_matching(text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, bigint, boolean, integer) to conductor_admin;

create or replace function conductor.cancel_matching(
  status          text default null,
  queue           text default null,
  kind            text default null,
  enqueued_after  timestamptz default null,
  enqueued_before timestamptz default null,
  finished_after  timestamptz default null,
  finished_before timestamptz default null,
  error_contains  text default null,
  expected        bigint default null,
  batch           integer default 1000
) returns integer
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_statuses conductor.task_status[] := conductor._bulk_statuses(
    'cancel', cancel_matching.status, cancel_matching.queue, cancel_matching.kind,
    cancel_matching.enqueued_after, cancel_matching.enqueued_before,
    cancel_matching.finished_after, cancel_matching.finished_before, cancel_matching.error_contains);
  v_cancelled integer;
begin
  perform conductor._check_bulk_call('cancel', v_statuses, cancel_matching.queue, cancel_matching.kind,
    cancel_matching.enqueued_after, cancel_matching.enqueued_before,
    cancel_matching.finished_after, cancel_matching.finished_before, cancel_matching.error_contains,
    cancel_matching.expected, cancel_matching.batch);

  -- lock order: matching rows newest first, SKIP LOCKED (cancel's strength); then cancel's tree
  select coalesce(pg_catalog.sum(conductor.cancel(m.id)), 0)::integer into v_cancelled
    from (select t.id from conductor.tasks t
           where t.status = any (v_statuses)
             and conductor._matches_filter(t, cancel_matching.queue, cancel_matching.kind,
                   cancel_matching.enqueued_after, cancel_matching.enqueued_before,
                   cancel_matching.finished_after, cancel_matching.finished_before, cancel_matching.error_contains)
           order by t.id desc
           limit cancel_matching.batch
             for no key update skip locked) m;
  return v_cancelled;
end
$$;

comment on function conductor.cancel_matching(text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, bigint, integer) is
$$Cancels (conductor.cancel(id), its rules unchanged: the task and its unfinished descendants,
a running attempt closed) at most batch (1-10000, default 1000) of the tasks the filter
matches, newest first, in one statement; returns how many tasks it cancelled, descendants
included. Call again until it returns 0: a cancelled task no longer matches. The filter is
preview_matching's (status NULL: queued, running and waiting tasks). Locks the matching rows
FOR NO KEY UPDATE SKIP LOCKED and evaluates the filter again on each locked row: a task a
worker is claiming is left for a later call, one that stopped matching is not touched.
Raises as preview_matching does for the filter; QC106 for a batch outside 1-10000; QC210
when expected is given and the filter now matches more tasks than expected. When it raises,
nothing changes. Admin only.$$;

revoke execute on function conductor.cancel_matching(text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, bigint, integer) from public;
grant execute on function conductor.cancel_matching(text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, bigint, integer) to conductor_admin;

commit;
