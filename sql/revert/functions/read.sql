-- Revert conductor:functions/read from pg: back to its v0.2.0 bodies (the v0.2.0 deploy
-- script, functions/read@v0.2.0.sql), then drops list_attempts, which the rework added
--
-- Reading tasks through the API (the tables are readable too):
--   conductor.get_task(task_id)                 one task with all its attempts
--   conductor.list_tasks(status, queue, kind, ...) newest first, keyset-paginated

begin;
set local role conductor_owner;

-- get_task gains the timeout column: its return type changes, so it is dropped and created again.
drop function conductor.get_task(bigint);

create or replace function conductor.get_task(task_id bigint)
  returns table (
    id bigint, queue text, kind text, status conductor.task_status, payload jsonb,
    result jsonb, error text, priority integer, run_at timestamptz, attempt integer,
    max_attempts integer, recoveries integer, max_recoveries integer,
    parent_id bigint, root_id bigint, dedupe_key text, concurrency_key text,
    enqueued_at timestamptz, started_at timestamptz, finished_at timestamptz,
    attempts jsonb, timeout interval)
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return query
  select t.id, t.queue, t.kind, t.status, t.payload, t.result, t.error, t.priority,
         t.run_at, t.attempt, t.max_attempts, t.recoveries, t.max_recoveries,
         t.parent_id, t.root_id, t.dedupe_key, t.concurrency_key,
         t.enqueued_at, t.started_at, t.finished_at,
         coalesce((select pg_catalog.jsonb_agg(pg_catalog.to_jsonb(a) - 'task_id' order by a.id)
                     from conductor.attempts a where a.task_id = t.id), '[]'),
         t.timeout
    from conductor.tasks t
   where t.id = get_task.task_id;
  if not found then
    raise exception 'task % does not exist', get_task.task_id using errcode = 'QC203';
  end if;
end
$$;

comment on function conductor.get_task(bigint) is
$$One task: status, payload, result, last error, counts, attempts (a JSON array,
oldest first, each with worker, times, outcome, error and traceback) and timeout (how long
one attempt may run; NULL: no limit).
Raises QC203 when the task does not exist.$$;

create or replace function conductor.list_tasks(
  status    text default null,
  queue     text default null,
  kind      text default null,
  before_id bigint default null,
  "limit"   integer default 50
) returns setof conductor.tasks
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_status conductor.task_status;
begin
  if list_tasks.status is not null then
    if not exists (select from pg_catalog.unnest(pg_catalog.enum_range(null::conductor.task_status)) s
                    where s::text = list_tasks.status) then
      raise exception 'unknown status %: one of %', pg_catalog.quote_literal(list_tasks.status),
        pg_catalog.array_to_string(pg_catalog.enum_range(null::conductor.task_status), ', ')
        using errcode = 'QC105';
    end if;
    v_status := list_tasks.status::conductor.task_status;
  end if;
  if list_tasks."limit" is null or list_tasks."limit" < 0 or list_tasks."limit" > 10000 then
    raise exception 'invalid limit %: between 0 and 10000', list_tasks."limit" using errcode = 'QC106';
  end if;

  return query
  select t.* from conductor.tasks t
   where (v_status is null or t.status = v_status)
     and (list_tasks.queue is null or t.queue = list_tasks.queue)
     and (list_tasks.kind is null or t.kind = list_tasks.kind)
     and (list_tasks.before_id is null or t.id < list_tasks.before_id)
   order by t.id desc
   limit list_tasks."limit";
end
$$;

comment on function conductor.list_tasks(text, text, text, bigint, integer) is
$$Tasks newest first, filtered by status, queue and kind (NULL: any); pass the last id
seen as before_id for the next page. Raises QC105 for an unknown status, QC106 for a
limit outside 0..10000.$$;

revoke execute on function conductor.get_task(bigint) from public;
revoke execute on function conductor.list_tasks(text, text, text, bigint, integer) from public;
grant execute on function conductor.get_task(bigint) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.list_tasks(text, text, text, bigint, integer) to conductor_client, conductor_worker, conductor_admin;


drop function conductor.list_attempts(bigint[]);

commit;
