-- Deploy conductor:functions/search to pg
--
-- Search (issue 29): find tasks by kind, queue, status, dedupe key, a payload
-- field and time on a database with millions of finished tasks, a page at a
-- time, each page at a bounded cost, with no index added to conductor.tasks
-- (every index there costs the hot path an entry at each state change).
--
--   conductor.search_tasks(kind, queue, status, dedupe_key, payload_contains,
--        enqueued_after, enqueued_before, finished_after, finished_before,
--        before_id, "limit", scan_limit)
--        -> (tasks conductor.tasks[], next_before_id, scanned, cut_short)
--        one page: the matches newest first, and where to go on
--   conductor._enqueued_id_bound(at)   the first id enqueued at or after at, by a
--        binary search on the primary key (an id bound, see below)
--
-- How a page is found. A page examines at most scan_limit candidate tasks,
-- newest (highest id) first below before_id, taken from the narrowest source the
-- filter allows, each one an existing index:
--   1. a dedupe_key with an unfinished status: tasks_dedupe_key (at most one task)
--   2. status queued, running or waiting: the partial index over that status
--      (tasks_ready, tasks_running, tasks_waiting): the backlog, not the history
--   3. status failed, dead, timed_out or expired: tasks_unsuccessful, walked by id
--   4. a finished_at range holding at most scan_limit tasks: tasks_finished
--   5. otherwise the primary key, walked newest first between the id bounds of
--      the enqueued range (and finished_before, since a task is enqueued before
--      it finishes)
-- Every filter is then checked exactly on each candidate; the page holds the
-- first "limit" matches. The answer's cursor: next_before_id NULL means nothing
-- older matches; otherwise pass it as before_id for the next page. cut_short says
-- the page stopped because it had examined scan_limit candidates (it may hold
-- fewer than "limit" matches, even none: search further with next_before_id).
--
-- Enqueued time as ids. ids are drawn in enqueue order and enqueued_at is the
-- enqueuing transaction's start, so ids grow with enqueued_at except for tasks
-- enqueued by a transaction that stayed open while others enqueued. The id
-- bounds are therefore searched for the range widened by 5 minutes on each side:
-- they are exact unless an enqueuing transaction stayed open longer than that
-- (or an admin moved the fake clock back), in which case a task enqueued within
-- the range may be left out. Never the other way: a task outside the range is
-- never returned, since enqueued_at itself is checked on every candidate.
--
-- Tables: conductor.tasks (read). No locks beyond a read; any number of callers;
-- granted to every role (conductor.tasks is readable by every role).

begin;
set local role conductor_owner;

create or replace function conductor._enqueued_id_bound(at timestamptz) returns bigint
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_lo bigint;
  v_hi bigint;
  v_mid bigint;
  v_id bigint;
  v_at timestamptz;
begin
  -- the answer lies in [v_lo, v_hi]: v_hi (one past the newest id) means none
  v_lo := coalesce((select t.id from conductor.tasks t order by t.id limit 1), 1);
  v_hi := coalesce((select t.id from conductor.tasks t order by t.id desc limit 1), 0) + 1;
  while v_lo < v_hi loop
    v_mid := v_lo + (v_hi - v_lo) / 2;
    -- ids have gaps (rolled back, pruned): the first task at or past v_mid
    select t.id, t.enqueued_at into v_id, v_at
      from conductor.tasks t where t.id >= v_mid order by t.id limit 1;
    if v_id is null or v_at >= _enqueued_id_bound.at then
      v_hi := v_mid;
    else
      v_lo := v_id + 1;
    end if;
    v_id := null;
  end loop;
  return v_lo;
end
$$;

comment on function conductor._enqueued_id_bound(timestamptz) is
$$The first id whose task was enqueued at or after at, by a binary search on the primary key
(about 2 log2(ids) index probes), taking ids to grow with enqueued_at; one past the newest id when
none was. A bound for search_tasks (see its comment for when it is exact), not an API.$$;

create or replace function conductor.search_tasks(
  kind             text default null,
  queue            text default null,
  status           text default null,
  dedupe_key       text default null,
  payload_contains jsonb default null,
  enqueued_after   timestamptz default null,
  enqueued_before  timestamptz default null,
  finished_after   timestamptz default null,
  finished_before  timestamptz default null,
  before_id        bigint default null,
  "limit"          integer default 50,
  scan_limit       integer default 10000
) returns table (tasks conductor.tasks[], next_before_id bigint, scanned integer, cut_short boolean)
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
  -- the contract is a bounded page whatever the statistics say: never plan a scan of the
  -- history (and no JIT for the plans a seqscan-off costing would make look expensive)
  set enable_seqscan = off
  set jit = off
  -- each statement planned for its values: a generic plan, which PL/pgSQL adopts after five
  -- calls, cannot tell a narrow finished range from the whole history (measured: 190 ms
  -- against 6 ms a page on a million tasks)
  set plan_cache_mode = force_custom_plan
as $$
declare
  v_skew constant interval := interval '5 minutes';
  v_status conductor.task_status;
  v_ceiling bigint := coalesce(search_tasks.before_id, 9223372036854775807::bigint);
  v_floor bigint := 0::bigint;
  v_ids bigint[];
  v_exhausted boolean;
  v_in_range integer;
  v_page conductor.tasks[];
  v_bad_what text;
  v_bad_at timestamptz;
begin
  -- validate: every refusal names the value
  v_status := conductor._task_status(search_tasks.status);
  if search_tasks.kind = '' or search_tasks.queue = '' or search_tasks.dedupe_key = '' then
    raise exception 'an empty % matches no task: give the % to look for, or NULL',
      case when search_tasks.kind = '' then 'kind' when search_tasks.queue = '' then 'queue' else 'dedupe_key' end,
      case when search_tasks.kind = '' then 'kind' when search_tasks.queue = '' then 'queue' else 'dedupe_key' end
      using errcode = 'QC106';
  end if;
  if pg_catalog.jsonb_typeof(search_tasks.payload_contains) is distinct from 'object'
     and search_tasks.payload_contains is not null then
    raise exception 'invalid payload_contains %: a JSON object whose fields the payload must hold',
      pg_catalog.left(search_tasks.payload_contains::text, 200)
      using errcode = 'QC106', hint = 'For instance {"order_id": 42}.';
  end if;
  -- the engine's times only (conductor._time_range()), so a bound widened by 5 minutes stays a time
  select r.what, r.at into v_bad_what, v_bad_at
    from (values ('enqueued_after', search_tasks.enqueued_after), ('enqueued_before', search_tasks.enqueued_before),
                 ('finished_after', search_tasks.finished_after), ('finished_before', search_tasks.finished_before)) r (what, at)
   where r.at is not null and not r.at <@ conductor._time_range()
   limit 1;
  if v_bad_what is not null then
    raise exception 'invalid % %: a time is finite, from 0001-01-02 to 9999-12-30 UTC', v_bad_what, v_bad_at
      using errcode = 'QC106', hint = 'Pass NULL for no bound on that side.';
  end if;
  if search_tasks.enqueued_after >= search_tasks.enqueued_before then
    raise exception 'empty enqueued range [%, %): enqueued_after must be before enqueued_before',
      search_tasks.enqueued_after, search_tasks.enqueued_before using errcode = 'QC106';
  end if;
  if search_tasks.finished_after >= search_tasks.finished_before then
    raise exception 'empty finished range [%, %): finished_after must be before finished_before',
      search_tasks.finished_after, search_tasks.finished_before using errcode = 'QC106';
  end if;
  if search_tasks.before_id < 1 then
    raise exception 'invalid before_id %: a task id (1 or more), or NULL for the newest',
      search_tasks.before_id using errcode = 'QC106';
  end if;
  if search_tasks."limit" is null or search_tasks."limit" < 1 or search_tasks."limit" > 1000 then
    raise exception 'invalid limit %: between 1 and 1000', coalesce(search_tasks."limit"::text, 'NULL')
      using errcode = 'QC106';
  end if;
  if search_tasks.scan_limit is null or search_tasks.scan_limit < 1 or search_tasks.scan_limit > 1000000 then
    raise exception 'invalid scan_limit %: between 1 and 1000000', coalesce(search_tasks.scan_limit::text, 'NULL')
      using errcode = 'QC106';
  end if;

  -- the id bounds an enqueued range gives (finished_before bounds enqueued_at too)
  if coalesce(search_tasks.enqueued_before, search_tasks.finished_before) is not null then
    v_ceiling := least(v_ceiling, conductor._enqueued_id_bound(
      least(search_tasks.enqueued_before, search_tasks.finished_before) + v_skew));
  end if;
  if search_tasks.enqueued_after is not null then
    v_floor := conductor._enqueued_id_bound(search_tasks.enqueued_after - v_skew);
  end if;

  -- the candidates: at most scan_limit ids, newest first, from the narrowest source
  if search_tasks.dedupe_key is not null and v_status in ('queued', 'running', 'waiting') then
    v_ids := array(select t.id from conductor.tasks t
                    where t.dedupe_key = search_tasks.dedupe_key
                      and t.status in ('queued', 'running', 'waiting')
                      and t.id < v_ceiling and t.id >= v_floor);
    v_exhausted := true;
  elsif v_status = 'queued' then
    v_ids := array(select c.id from (select t.id from conductor.tasks t
                                      where t.status = 'queued' and t.id < v_ceiling and t.id >= v_floor offset 0) c
                    order by c.id desc limit search_tasks.scan_limit);
  elsif v_status = 'running' then
    v_ids := array(select c.id from (select t.id from conductor.tasks t
                                      where t.status = 'running' and t.id < v_ceiling and t.id >= v_floor offset 0) c
                    order by c.id desc limit search_tasks.scan_limit);
  elsif v_status = 'waiting' then
    v_ids := array(select c.id from (select t.id from conductor.tasks t
                                      where t.status = 'waiting' and t.id < v_ceiling and t.id >= v_floor offset 0) c
                    order by c.id desc limit search_tasks.scan_limit);
  elsif v_status in ('failed', 'dead', 'timed_out', 'expired') then
    v_ids := array(select t.id from conductor.tasks t
                    where t.status in ('failed', 'dead', 'timed_out', 'expired') and t.id < v_ceiling and t.id >= v_floor
                    order by t.id desc limit search_tasks.scan_limit);
  end if;

  if v_ids is null and coalesce(search_tasks.finished_after, search_tasks.finished_before) is not null then
    -- a finished range holding few tasks is read whole from tasks_finished (counted there first)
    select count(*)::integer into v_in_range
      from (select from conductor.tasks t
             where t.finished_at is not null
               and t.finished_at >= coalesce(search_tasks.finished_after, '-infinity')
               and t.finished_at < coalesce(search_tasks.finished_before, 'infinity')
             limit search_tasks.scan_limit + 1) c;
    if v_in_range <= search_tasks.scan_limit then
      v_ids := array(select c.id from (select t.id from conductor.tasks t
                                        where t.finished_at is not null
                                          and t.finished_at >= coalesce(search_tasks.finished_after, '-infinity')
                                          and t.finished_at < coalesce(search_tasks.finished_before, 'infinity')
                                          and t.id < v_ceiling and t.id >= v_floor) c
                      order by c.id desc);
      v_exhausted := true;
    end if;
  end if;

  if v_ids is null then
    v_ids := array(select t.id from conductor.tasks t where t.id < v_ceiling and t.id >= v_floor
                    order by t.id desc limit search_tasks.scan_limit);
  end if;
  v_exhausted := coalesce(v_exhausted, pg_catalog.cardinality(v_ids) < search_tasks.scan_limit);

  -- every filter, exactly, on the candidates; one more than a page says whether a page follows
  v_page := array(
    select t from conductor.tasks t
     where t.id = any(v_ids)
       and (search_tasks.kind is null or t.kind = search_tasks.kind)
       and (search_tasks.queue is null or t.queue = search_tasks.queue)
       and (v_status is null or t.status = v_status)
       and (search_tasks.dedupe_key is null or t.dedupe_key = search_tasks.dedupe_key)
       and (search_tasks.payload_contains is null or t.payload @> search_tasks.payload_contains)
       and (search_tasks.enqueued_after is null or t.enqueued_at >= search_tasks.enqueued_after)
       and (search_tasks.enqueued_before is null or t.enqueued_at < search_tasks.enqueued_before)
       and (search_tasks.finished_after is null or t.finished_at >= search_tasks.finished_after)
       and (search_tasks.finished_before is null or t.finished_at < search_tasks.finished_before)
     order by t.id desc
     limit search_tasks."limit" + 1);

  if pg_catalog.cardinality(v_page) > search_tasks."limit" then
    tasks := v_page[1:search_tasks."limit"];
    next_before_id := (v_page[search_tasks."limit"]).id;
    cut_short := false;
  else
    tasks := v_page;
    next_before_id := case when v_exhausted then null else v_ids[pg_catalog.cardinality(v_ids)] end;
    cut_short := not v_exhausted;
  end if;
  scanned := pg_catalog.cardinality(v_ids);
  return next;
end
$$;

comment on function conductor.search_tasks(text, text, text, text, jsonb, timestamptz, timestamptz,
                                           timestamptz, timestamptz, bigint, integer, integer) is
$$One page of a search, newest first: tasks whose kind, queue, status and dedupe_key equal the ones
given, whose payload contains payload_contains (jsonb @>), enqueued in [enqueued_after,
enqueued_before) and finished in [finished_after, finished_before) (NULL: any). Returns one row:
tasks (the first "limit" matches, newest first), next_before_id (pass it as before_id for the next
page; NULL: nothing older matches), scanned (candidates examined) and cut_short (the page stopped
after examining scan_limit candidates: it may hold fewer than "limit" matches; search further
with next_before_id). A page examines at most scan_limit tasks, taken through an existing index
(the dedupe, status or finished-time partial indexes, else the primary key between the enqueued
range's id bounds), so its cost is bounded whatever the history. An enqueued range is turned into id
bounds widened by 5 minutes: a task enqueued in a transaction that stayed open longer than that may
be left out; none outside the range is returned. Raises QC105 for an unknown status, QC106 for an
empty kind, queue or dedupe_key, a payload_contains that is not a JSON object, a time that is not finite or outside 0001-01-02 to
9999-12-30 UTC, an empty time range,
a before_id under 1, a limit outside 1..1000 or a scan_limit outside 1..1000000. Reads only.$$;

revoke execute on function conductor._enqueued_id_bound(timestamptz) from public;
revoke execute on function conductor.search_tasks(text, text, text, text, jsonb, timestamptz, timestamptz,
                                                  timestamptz, timestamptz, bigint, integer, integer) from public;
grant execute on function conductor.search_tasks(text, text, text, text, jsonb, timestamptz, timestamptz,
                                                 timestamptz, timestamptz, bigint, integer, integer)
  to conductor_client, conductor_worker, conductor_admin;

commit;
