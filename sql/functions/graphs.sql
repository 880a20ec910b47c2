-- Deploy conductor:functions/graphs to pg
--
-- Graphs and batches, declared (issue 31): tasks enqueued at once with
-- dependencies between them (C runs after A and B, and reads their results),
-- and a batch's callbacks (when every member has finished; when the first one
-- does not succeed), with no parent handler that spawns and waits.
--
--   conductor.enqueue_graph(tasks, on_complete, on_failure)
--                              -> (graph_id, name, task_id, role)   declare and enqueue
--   conductor.dependency_results(task_id) -> jsonb                  {name: outcome} of its dependencies
--   conductor.graph(graph_id)  -> (task_id, name, role, kind, status, layer, after, error)
--                                                                   the graph, for the dashboard
--   conductor.cancel_graph(graph_id) -> integer                     cancel what has not finished
--   conductor._graph_member_finished()                              the trigger that does the rest
--
-- The tables are schema/graphs. A member with dependencies waits (status
-- 'waiting', wait_for 'dependencies'); a callback waits (wait_for 'graph')
-- from the start, so enqueue_graph validates it with the members (all or
-- nothing) and it is released at most once: a waiting task is queued by one
-- compare-and-set on its locked row. When a member's status turns final the
-- trigger tasks_graph_member_finished:
--   1. locks, in descending id, the member's dependents still waiting (and, when
--      it did not succeed, every member after them that does not run on
--      failure: the edges never change, so the set is known before any lock),
--      then the graph's callbacks still waiting;
--   2. when it did not succeed, queues on_failure, naming it (before the
--      cancels below, so the cause is named, not a member cancelled for it);
--   3. queues each dependent whose dependencies have all finished, all
--      succeeded or the dependent run_on_failure; cancels each that cannot run
--      and, in one statement, every member after it that cannot either (their
--      own ends then find only finished dependents: the cascade is not a
--      recursion as deep as the graph);
--   4. once no member is unfinished, queues on_complete and cancels an
--      on_failure that no failure called for.
-- A callback's payload gets the key "graph": the graph's id and its members'
-- statuses counted (on_complete), or the member that did not succeed
-- (on_failure). After cancel_graph no callback is queued.
-- Each check reads in a statement after its lock, so of two members ending at
-- once in two sessions the second to lock sees the first's end: a dependent,
-- a callback, is queued once, and never left waiting.
--
-- Ids: enqueue_graph inserts the callbacks first, then the members in reverse
-- dependency order, so a task's dependents and its graph's callbacks have
-- smaller ids than it has.
-- Lock order (that of functions/runs): task rows in descending id. A member
-- ending holds its row, then locks its dependents and the members after them,
-- then the callbacks, all in one descending order. cancel_graph locks every task of the graph in
-- descending id before it changes any.

begin;
set local role conductor_owner;

-- Raises QC127, QC128 or QC129 at the first fault of a graph's declaration;
-- returns the members' positions (1-based, in input order) in an order where
-- each comes after its dependencies, with each one's layer (the longest path
-- of dependencies before it). Kahn's algorithm over arrays: O(members + edges).
create or replace function conductor._graph_order(tasks jsonb, out ord integer[], out layers integer[])
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_n integer;
  v_names text[];
  v_pos jsonb;
  v_src integer[];
  v_dst integer[];
  v_indeg integer[];
  v_off integer[];
  v_head integer := 1;
  v_tail integer := 0;
  v_i integer;
  v_bad record;
begin
  if _graph_order.tasks is null or pg_catalog.jsonb_typeof(_graph_order.tasks) <> 'array'
     or pg_catalog.jsonb_array_length(_graph_order.tasks) = 0 then
    raise exception 'enqueue_graph takes a non-empty JSON array of task objects, got %',
      coalesce(conductor._echo(_graph_order.tasks::text), 'SQL NULL')
      using errcode = 'QC127';
  end if;

  select a.n, a.t into v_bad
    from pg_catalog.jsonb_array_elements(_graph_order.tasks) with ordinality as a(t, n)
   where pg_catalog.jsonb_typeof(a.t) <> 'object'
      or pg_catalog.jsonb_typeof(a.t->'name') is distinct from 'string'
      or a.t->>'name' !~ '^[^[:cntrl:]]{1,200}$'
      or coalesce(pg_catalog.jsonb_typeof(a.t->'after'), 'null') not in ('array', 'null')
      or coalesce(pg_catalog.jsonb_typeof(a.t->'run_on_failure'), 'null') not in ('boolean', 'null')
      or a.t ?| array['dedupe_key', 'parent_id', 'dedupe_window', 'dedupe_states', 'on_duplicate',
                      'debounce', 'debounce_max']
   order by a.n limit 1;
  if found then
    raise exception using errcode = 'QC127',
      message = pg_catalog.format('invalid graph member #%s %s', v_bad.n,
        case when pg_catalog.jsonb_typeof(v_bad.t) <> 'object' then 'is not a JSON object'
             when pg_catalog.jsonb_typeof(v_bad.t->'name') is distinct from 'string'
                  or v_bad.t->>'name' !~ '^[^[:cntrl:]]{1,200}$'
               then pg_catalog.format('name %s: a name is a string of 1 to 200 characters, none a control character',
                                      case when v_bad.t ? 'name' then conductor._echo((v_bad.t->'name')::text)
                                           else 'missing' end)
             when coalesce(pg_catalog.jsonb_typeof(v_bad.t->'after'), 'null') not in ('array', 'null')
               then pg_catalog.format('(%s): after %s is not a JSON array of names',
                                      conductor._echo(v_bad.t->>'name'), conductor._echo((v_bad.t->'after')::text))
             when coalesce(pg_catalog.jsonb_typeof(v_bad.t->'run_on_failure'), 'null') not in ('boolean', 'null')
               then pg_catalog.format('(%s): run_on_failure %s is not true or false',
                                      conductor._echo(v_bad.t->>'name'), conductor._echo((v_bad.t->'run_on_failure')::text))
             else pg_catalog.format('(%s): a member takes no dedupe_key, dedupe option or parent_id (it is a new task, '
                                    'a root of its own)', conductor._echo(v_bad.t->>'name')) end);
  end if;

  select d.name into v_bad
    from (select a.t->>'name' as name from pg_catalog.jsonb_array_elements(_graph_order.tasks) a(t)) d
   group by d.name having pg_catalog.count(*) > 1
   limit 1;
  if found then
    raise exception 'invalid graph: the name % is given to more than one member', conductor._echo(v_bad.name)
      using errcode = 'QC127';
  end if;

  select pg_catalog.count(*)::integer, pg_catalog.array_agg(a.t->>'name' order by a.n),
         pg_catalog.jsonb_object_agg(a.t->>'name', a.n)
    into v_n, v_names, v_pos
    from pg_catalog.jsonb_array_elements(_graph_order.tasks) with ordinality as a(t, n);

  select a.t->>'name' as member, d.dep into v_bad
    from pg_catalog.jsonb_array_elements(_graph_order.tasks) with ordinality as a(t, n),
         pg_catalog.jsonb_array_elements(coalesce(nullif(a.t->'after', 'null'), '[]')) with ordinality as d(dep, k)
   where pg_catalog.jsonb_typeof(d.dep) <> 'string' or not v_pos ? (d.dep #>> '{}')
   order by a.n, d.k limit 1;
  if found then
    raise exception 'invalid graph: member % runs after %, which is not a member''s name',
      conductor._echo(v_bad.member), conductor._echo(v_bad.dep #>> '{}')
      using errcode = 'QC128';
  end if;

  -- the edges, each once, sorted by the dependency: v_off[i] .. v_off[i + 1] - 1 are i's
  select coalesce(pg_catalog.array_agg(e.src order by e.src, e.dst), '{}'),
         coalesce(pg_catalog.array_agg(e.dst order by e.src, e.dst), '{}')
    into v_src, v_dst
    from (select distinct (v_pos->>(d.dep))::integer as src, a.n::integer as dst
            from pg_catalog.jsonb_array_elements(_graph_order.tasks) with ordinality as a(t, n),
                 pg_catalog.jsonb_array_elements_text(coalesce(nullif(a.t->'after', 'null'), '[]')) as d(dep)) e;

  v_indeg := pg_catalog.array_fill(0, array[v_n]);
  v_off := pg_catalog.array_fill(0, array[v_n + 1]);
  layers := pg_catalog.array_fill(0, array[v_n]);
  ord := pg_catalog.array_fill(0, array[v_n]);
  for v_i in 1 .. coalesce(pg_catalog.cardinality(v_src), 0) loop
    v_indeg[v_dst[v_i]] := v_indeg[v_dst[v_i]] + 1;
    v_off[v_src[v_i] + 1] := v_off[v_src[v_i] + 1] + 1;
  end loop;
  v_off[1] := 1;
  for v_i in 1 .. v_n loop
    v_off[v_i + 1] := v_off[v_i] + v_off[v_i + 1];
    if v_indeg[v_i] = 0 then
      v_tail := v_tail + 1;
      ord[v_tail] := v_i;
    end if;
  end loop;
  while v_head <= v_tail loop
    v_i := ord[v_head];
    v_head := v_head + 1;
    for v_j in v_off[v_i] .. v_off[v_i + 1] - 1 loop
      layers[v_dst[v_j]] := greatest(layers[v_dst[v_j]], layers[v_i] + 1);
      v_indeg[v_dst[v_j]] := v_indeg[v_dst[v_j]] - 1;
      if v_indeg[v_dst[v_j]] = 0 then
        v_tail := v_tail + 1;
        ord[v_tail] := v_dst[v_j];
      end if;
    end loop;
  end loop;
  if v_tail < v_n then
    raise exception 'invalid graph: the dependencies of % form a cycle (these members are on one or after one)',
      conductor._echo(pg_catalog.array_to_string(array(
        select v_names[i] from pg_catalog.generate_subscripts(v_indeg, 1) i where v_indeg[i] > 0 order by i), ', '))
      using errcode = 'QC129';
  end if;
end
$$;

comment on function conductor._graph_order(jsonb) is
$$The order enqueue_graph writes a graph's members in, and their layers: ord lists the
members' positions in tasks (1-based) so that each comes after its dependencies; layers[i]
is the length of the longest chain of dependencies before member i (0: none). Raises
QC127 when tasks is not a non-empty array of objects, a member's name is not a string of
1-200 characters without control characters or is given twice, after is not an array,
run_on_failure not a boolean, or a member has a dedupe_key, a dedupe option or a
parent_id; QC128 when after names no member; QC129 when dependencies form a cycle
(naming the members on it or after it). Reads nothing, locks nothing.$$;

-- A callback spec: an enqueue_many element, its payload free of the key "graph"
-- (which the release writes), no dedupe or parent (it is a new task).
create or replace function conductor._check_graph_callback(what text, spec jsonb) returns void
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if _check_graph_callback.spec is null or _check_graph_callback.spec = 'null' then
    return;
  end if;
  if pg_catalog.jsonb_typeof(_check_graph_callback.spec) <> 'object'
     or _check_graph_callback.spec ?| array['dedupe_key', 'parent_id', 'dedupe_window', 'dedupe_states',
                                            'on_duplicate', 'debounce', 'debounce_max', 'name', 'after', 'run_on_failure']
     or (pg_catalog.jsonb_typeof(_check_graph_callback.spec->'payload') = 'object'
         and _check_graph_callback.spec->'payload' ? 'graph') then
    raise exception 'invalid % callback %: a task object without dedupe options, parent_id, name, after, '
                    'run_on_failure or a payload key "graph" (the engine writes it)',
      _check_graph_callback.what, conductor._echo(_check_graph_callback.spec::text)
      using errcode = 'QC127';
  end if;
end
$$;

comment on function conductor._check_graph_callback(text, jsonb) is
$$Raises QC127 naming what ('on_complete', 'on_failure') and spec unless spec is NULL or a
task object enqueue_many takes without dedupe options or parent_id, without a member's
keys (name, after, run_on_failure), and whose payload has no key "graph" (the release of
the callback writes it). Reads nothing.$$;

create or replace function conductor.enqueue_graph(tasks jsonb, on_complete jsonb default null,
                                                   on_failure jsonb default null)
  returns table (graph_id bigint, name text, task_id bigint, role text)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_order record;
  v_n integer;
  v_members bigint[];
  v_batch jsonb;
  v_ids bigint[];
  v_callbacks integer;
  v_complete_id bigint;
  v_failure_id bigint;
  v_graph bigint;
begin
  select * into v_order from conductor._graph_order(enqueue_graph.tasks);
  perform conductor._check_graph_callback('on_complete', enqueue_graph.on_complete);
  perform conductor._check_graph_callback('on_failure', enqueue_graph.on_failure);
  v_n := pg_catalog.cardinality(v_order.ord);

  -- callbacks first, then the members in reverse dependency order: smaller ids
  -- for dependents and callbacks (the lock order at the top)
  v_batch := pg_catalog.jsonb_path_query_array(
               pg_catalog.jsonb_build_array(nullif(enqueue_graph.on_complete, 'null'),
                                            nullif(enqueue_graph.on_failure, 'null')), '$[*] ? (@ != null)')
          || coalesce((select pg_catalog.jsonb_agg((enqueue_graph.tasks->(o.p - 1)) - array['name', 'after', 'run_on_failure']
                                                   order by o.k desc)
                         from pg_catalog.unnest(v_order.ord) with ordinality as o(p, k)), '[]');
  v_callbacks := (enqueue_graph.on_complete is not null and enqueue_graph.on_complete <> 'null')::integer
               + (enqueue_graph.on_failure is not null and enqueue_graph.on_failure <> 'null')::integer;
  v_ids := array(select e.id from conductor.enqueue_many(v_batch) with ordinality as e(id, n) order by e.n);
  if enqueue_graph.on_complete is not null and enqueue_graph.on_complete <> 'null' then
    v_complete_id := v_ids[1];
  end if;
  if enqueue_graph.on_failure is not null and enqueue_graph.on_failure <> 'null' then
    v_failure_id := v_ids[v_callbacks];
  end if;

  insert into conductor.graphs (created_at, on_complete_task_id, on_failure_task_id)
  values (v_now, v_complete_id, v_failure_id)
  returning id into v_graph;

  -- the member at input position p: v_members[p] (ord[k] = p was written k-th from the end)
  v_members := pg_catalog.array_fill(0::bigint, array[v_n]);
  for v_k in 1 .. v_n loop
    v_members[v_order.ord[v_k]] := v_ids[v_callbacks + v_n - v_k + 1];
  end loop;

  insert into conductor.graph_nodes (task_id, graph_id, name, run_on_failure, layer)
  select v_members[a.n], v_graph, a.t->>'name', coalesce((a.t->>'run_on_failure')::boolean, false), v_order.layers[a.n]
    from pg_catalog.jsonb_array_elements(enqueue_graph.tasks) with ordinality as a(t, n);

  insert into conductor.graph_edges (task_id, dependency_id)
  select distinct v_members[a.n], dn.task_id
    from pg_catalog.jsonb_array_elements(enqueue_graph.tasks) with ordinality as a(t, n)
   cross join pg_catalog.jsonb_array_elements_text(coalesce(nullif(a.t->'after', 'null'), '[]')) as d(dep)
    join conductor.graph_nodes dn on dn.graph_id = v_graph and dn.name = d.dep;

  update conductor.tasks t
     set graph_id = case when t.id in (v_complete_id, v_failure_id) then null else v_graph end,
         status = case when t.id in (v_complete_id, v_failure_id)
                         or exists (select from conductor.graph_edges e where e.task_id = t.id)
                       then 'waiting'::conductor.task_status else t.status end,
         wait_for = case when t.id in (v_complete_id, v_failure_id) then 'graph'
                         when exists (select from conductor.graph_edges e where e.task_id = t.id) then 'dependencies' end
   where t.id = any (v_ids);

  return query
    select v_graph, a.t->>'name', v_members[a.n], 'member'::text
      from pg_catalog.jsonb_array_elements(enqueue_graph.tasks) with ordinality as a(t, n)
     order by a.n;
  if v_complete_id is not null then
    return query select v_graph, null::text, v_complete_id, 'on_complete'::text;
  end if;
  if v_failure_id is not null then
    return query select v_graph, null::text, v_failure_id, 'on_failure'::text;
  end if;
end
$$;


comment on function conductor.enqueue_graph(jsonb, jsonb, jsonb) is
$$Enqueues a graph of tasks in one transaction, all or nothing; returns a row per member in
input order (graph_id, name, task_id, role 'member'), then one per callback (name NULL,
role 'on_complete' or 'on_failure').
tasks: a non-empty JSON array of enqueue_many objects, each with a name (unique in the
graph, 1-200 characters) and optionally after (an array of the names it runs after) and
run_on_failure (true: it runs once its dependencies have finished whatever their outcome;
false, the default: it is cancelled when one did not succeed). A member with dependencies
waits (status 'waiting', wait_for 'dependencies') until the last of them finishes; it then
runs, reading their outcomes with conductor.dependency_results.
on_complete, on_failure: a task object each (or NULL), enqueued now as waiting (wait_for
'graph') and queued exactly once: on_failure when the first member ends other than
succeeded, on_complete when every member has finished (an on_failure no failure called
for is then cancelled). The queued callback's payload has the key "graph": {"graph_id",
"statuses": {status: count}} for on_complete, {"graph_id", "failed": {"name", "task_id",
"status", "error"}} for on_failure.
Raises QC127 (a malformed member or callback: see _graph_order and _check_graph_callback),
QC128 (after names no member), QC129 (a cycle), and what enqueue_many raises for a member's
or callback's options. Locks nothing that exists; callers may run it at once.$$;

-- Queues waiting tasks of a graph (dependents, callbacks): the release, one
-- compare-and-set on status, so a task is released once however many try.
create or replace function conductor._graph_release(task_ids bigint[], outcome jsonb) returns integer
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_ids bigint[];
begin
  with released as (
    update conductor.tasks t
       set status = 'queued', run_at = greatest(t.run_at, v_now), wait_for = null,
           payload = case when _graph_release.outcome is null then t.payload
                          else t.payload || pg_catalog.jsonb_build_object('graph', _graph_release.outcome) end
     where t.id = any (_graph_release.task_ids) and t.status = 'waiting' and t.wait_for in ('dependencies', 'graph')
    returning t.id
  )
  select pg_catalog.array_agg(r.id) into v_ids from released r;
  if v_ids is null then
    return 0;
  end if;
  -- a deadline to start counts from the release: the reaper ends only queued tasks
  perform conductor._set_deadlines(pg_catalog.array_agg(t.id), pg_catalog.array_agg(t.run_at),
                                   pg_catalog.array_agg(t.expires_in))
     from conductor.tasks t
    where t.id = any (v_ids) and t.expires_in is not null
   having pg_catalog.count(*) > 0;
  perform conductor._notify_queue(q.queue)
     from (select distinct t.queue from conductor.tasks t where t.id = any (v_ids)) q;
  return pg_catalog.cardinality(v_ids);
end
$$;

comment on function conductor._graph_release(bigint[], jsonb) is
$$Queues each of task_ids that waits for its dependencies or its graph (run_at now unless
later; a deadline to start, expires_in, counted from now) and notifies their queues;
outcome, when not NULL, is written into the payload under the key "graph" (a callback's).
Returns how many it queued; skips the others. The caller holds their rows (the trigger
tasks_graph_member_finished locks them first).$$;

-- The member's dependents and the graph's callbacks. Runs as the statement that
-- ended the member (complete, fail, cancel, reap, ...): the owner, inside a definer.
create or replace function conductor._graph_member_finished() returns trigger
  language plpgsql
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_failed boolean;
  v_ready bigint[];
  v_doomed bigint[];
  v_cancelled bigint[];
  v_graph conductor.graphs;
  v_name text;
begin
  if new.status = any (conductor.unfinished_statuses()) or old.status <> all (conductor.unfinished_statuses()) then
    return null;  -- not an end: a claim, a retry, a wake-up
  end if;
  v_failed := new.status <> 'succeeded';
  select n.name into v_name from conductor.graph_nodes n where n.task_id = new.id;

  -- 1. lock, in descending id, what this end may change: the dependents, and when it
  -- failed every member after them that does not run on failure (the edges never
  -- change, so the set is known before any lock); then the callbacks, smaller still
  perform from conductor.tasks t
    where t.id in (with recursive after_it as (
                     select e.task_id as id from conductor.graph_edges e where e.dependency_id = new.id
                     union
                     select e.task_id from after_it
                       join conductor.graph_nodes n on n.task_id = after_it.id and not n.run_on_failure
                       join conductor.graph_edges e on e.dependency_id = after_it.id
                      where v_failed)
                   select after_it.id from after_it)
      and t.status = 'waiting'
    order by t.id desc
      for no key update;
  select g.* into v_graph from conductor.graphs g where g.id = new.graph_id;
  if v_graph.cancelled_at is not null then
    v_graph.on_complete_task_id := null;  -- cancel_graph: no callback after it
    v_graph.on_failure_task_id := null;
  end if;
  perform from conductor.tasks t
    where t.id in (v_graph.on_complete_task_id, v_graph.on_failure_task_id) and t.status = 'waiting'
    order by t.id desc
      for no key update;

  -- 2. on_failure, naming this member: before the cancels below, whose own ends
  -- (this trigger again, for each) then find it released
  if v_failed and v_graph.on_failure_task_id is not null then
    perform conductor._graph_release(array[v_graph.on_failure_task_id], pg_catalog.jsonb_build_object(
      'graph_id', v_graph.id,
      'failed', pg_catalog.jsonb_build_object('name', v_name, 'task_id', new.id, 'status', new.status,
                                              'error', new.error)));
  end if;

  -- 3. the dependents, read after their locks: queue those whose dependencies have all
  -- finished (all succeeded, or it runs on failure); cancel those that cannot run
  select pg_catalog.array_agg(s.id) filter (where not s.pending and (not s.failed or s.run_on_failure)),
         pg_catalog.array_agg(s.id) filter (where s.failed and not s.run_on_failure)
    into v_ready, v_doomed
    from (select d.id, n.run_on_failure,
                 pg_catalog.bool_or(p.status = any (conductor.unfinished_statuses())) as pending,
                 pg_catalog.bool_or(p.status <> all (conductor.unfinished_statuses())
                                    and p.status <> 'succeeded') as failed
            from conductor.graph_edges de
            join conductor.tasks d on d.id = de.task_id
            join conductor.graph_nodes n on n.task_id = d.id
            join conductor.graph_edges e on e.task_id = d.id
            join conductor.tasks p on p.id = e.dependency_id
           where de.dependency_id = new.id and d.status = 'waiting' and d.wait_for = 'dependencies'
           group by d.id, n.run_on_failure) s;
  if v_ready is not null then
    perform conductor._graph_release(v_ready, null);
  end if;
  if v_doomed is not null then
    -- the doomed, and every member after them that does not run on failure (locked above)
    with recursive doomed as (
      select pg_catalog.unnest(v_doomed) as id
      union
      select e.task_id from doomed
        join conductor.graph_edges e on e.dependency_id = doomed.id
        join conductor.graph_nodes n on n.task_id = e.task_id and not n.run_on_failure
    ), cancelled as (
      update conductor.tasks t
         set status = 'cancelled', finished_at = v_now, wait_for = null,
             error = pg_catalog.format('cancelled: dependency %s (task %s) ended %s',
                                       conductor._echo(v_name), new.id, new.status)
       where t.id in (select doomed.id from doomed) and t.status = 'waiting' and t.wait_for = 'dependencies'
      returning t.id
    )
    select pg_catalog.array_agg(c.id) into v_cancelled from cancelled c;
    perform conductor._notify_done(v_cancelled);
  end if;

  -- 4. on_complete, once no member is unfinished; an on_failure no failure called for is cancelled
  if (v_graph.on_complete_task_id is not null or v_graph.on_failure_task_id is not null)
     and not exists (select from conductor.tasks t
                      where t.graph_id = v_graph.id and t.status = any (conductor.unfinished_statuses())) then
    if v_graph.on_complete_task_id is not null then
      perform conductor._graph_release(array[v_graph.on_complete_task_id], pg_catalog.jsonb_build_object(
        'graph_id', v_graph.id,
        'statuses', (select pg_catalog.jsonb_object_agg(c.status, c.n)
                       from (select t.status, pg_catalog.count(*) as n from conductor.tasks t
                              where t.graph_id = v_graph.id group by t.status) c)));
    end if;
    if v_graph.on_failure_task_id is not null then
      with cancelled as (
        update conductor.tasks t
           set status = 'cancelled', finished_at = v_now, wait_for = null,
               error = pg_catalog.format('cancelled: every member of graph %s succeeded', v_graph.id)
         where t.id = v_graph.on_failure_task_id and t.status = 'waiting'
        returning t.id
      )
      select pg_catalog.array_agg(c.id) into v_cancelled from cancelled c;
      perform conductor._notify_done(v_cancelled);
    end if;
  end if;
  return null;
end
$$;

comment on function conductor._graph_member_finished() is
$$Trigger function of tasks_graph_member_finished (after a graph member's status changes;
it acts when the status turned final, from an unfinished one). Unless the graph was
cancelled, queues its on_failure callback when this member did not succeed (naming it);
queues the member's dependents whose dependencies have all finished (all succeeded, or
any outcome for run_on_failure); cancels those that cannot run, and every member after
them that cannot either, naming this member in their error; once no member is
unfinished, queues on_complete (cancelling an on_failure left waiting). Locks, before it
reads, the waiting dependents (and when the member failed every member after them that
does not run on failure), then the callbacks: descending id, after the member's own row.
Returns null.$$;

-- The WHEN tests graph_id alone: PostgreSQL reads a trigger's WHEN from its stored
-- text at each statement that updates tasks (every claim and complete), so an
-- ordinary task, graph_id NULL, pays for parsing one null test; a member's updates
-- call the function, which returns at once unless its status turned final.
create or replace trigger tasks_graph_member_finished
  after update of status on conductor.tasks
  for each row
  when (new.graph_id is not null)
  execute function conductor._graph_member_finished();

create or replace function conductor.dependency_results(task_id bigint) returns jsonb
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_results jsonb;
begin
  if not exists (select from conductor.tasks t where t.id = dependency_results.task_id) then
    raise exception 'task % does not exist', dependency_results.task_id using errcode = 'QC203';
  end if;
  select coalesce(pg_catalog.jsonb_object_agg(n.name, pg_catalog.jsonb_build_object(
           'task_id', p.id, 'status', p.status, 'result', p.result, 'error', p.error)), '{}')
    into v_results
    from conductor.graph_edges e
    join conductor.graph_nodes n on n.task_id = e.dependency_id
    join conductor.tasks p on p.id = e.dependency_id
   where e.task_id = dependency_results.task_id;
  return v_results;
end
$$;

comment on function conductor.dependency_results(bigint) is
$$The outcomes of the dependencies of task_id (a graph member, enqueue_graph's after), by
their names: {name: {"task_id", "status", "result", "error"}}; {} for a task without
dependencies. What a released member reads as it runs (an unfinished dependency shows its
status so far: a released member's are all finished). Raises QC203 when the task does not
exist. Reads only, locks nothing.$$;

create or replace function conductor.graph(graph_id bigint)
  returns table (task_id bigint, name text, role text, kind text, status conductor.task_status,
                 layer integer, after bigint[], error text)
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_graph conductor.graphs;
  v_depth integer;
begin
  select g.* into v_graph from conductor.graphs g where g.id = graph.graph_id;
  if not found then
    raise exception 'graph % does not exist', graph.graph_id using errcode = 'QC215';
  end if;
  select coalesce(pg_catalog.max(n.layer), -1) + 1 into v_depth
    from conductor.graph_nodes n where n.graph_id = v_graph.id;
  return query
    select t.id, n.name, 'member'::text, t.kind, t.status, n.layer,
           array(select e.dependency_id from conductor.graph_edges e where e.task_id = t.id order by e.dependency_id),
           t.error
      from conductor.graph_nodes n
      join conductor.tasks t on t.id = n.task_id
     where n.graph_id = v_graph.id
    union all
    select t.id, null, c.role, t.kind, t.status, v_depth, '{}'::bigint[], t.error
      from (values ('on_complete', v_graph.on_complete_task_id), ('on_failure', v_graph.on_failure_task_id)) c(role, id)
      join conductor.tasks t on t.id = c.id
     order by 6, 1 desc;
end
$$;

comment on function conductor.graph(bigint) is
$$The tasks of graph graph_id, for the dashboard and the CLI: a row per member (task_id,
name, role 'member', kind, status, layer: the longest chain of dependencies before it,
after: the ids it runs after, error) and per callback (name NULL, role 'on_complete' or
'on_failure', layer one past the members'), by layer, then by id descending (within a
layer, the order of the declaration for the first). A
member or callback pruned since is left out. Raises QC215 when the graph does not exist.
Reads only, locks nothing.$$;

create or replace function conductor.cancel_graph(graph_id bigint) returns integer
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  update conductor.graphs g set cancelled_at = coalesce(g.cancelled_at, conductor.now()) where g.id = cancel_graph.graph_id;
  if not found then
    raise exception 'graph % does not exist', cancel_graph.graph_id using errcode = 'QC215';
  end if;

  -- as cancel(): the graph's members and callbacks, with what they spawned
  return conductor._cancel_trees(
    array(select n.task_id from conductor.graph_nodes n where n.graph_id = cancel_graph.graph_id
          union all
          select c.id from conductor.graphs g
           cross join lateral (values (g.on_complete_task_id), (g.on_failure_task_id)) c(id)
           where g.id = cancel_graph.graph_id and c.id is not null),
    pg_catalog.format('cancelled with graph %s', cancel_graph.graph_id));
end
$$;

comment on function conductor.cancel_graph(bigint) is
$$Cancels every unfinished task of graph graph_id (its members, its callbacks, and what they
spawned), as cancel() cancels a tree, and marks the graph cancelled: no callback is queued
after it. Returns how many it cancelled (0 when all had finished). Running ones learn it at
their next heartbeat. Locks the graph's row, then its task rows in descending id (the lock
order of functions/runs). Raises QC215 when the graph does not exist.$$;

revoke execute on function conductor._graph_order(jsonb) from public;
revoke execute on function conductor._check_graph_callback(text, jsonb) from public;
revoke execute on function conductor._graph_release(bigint[], jsonb) from public;
revoke execute on function conductor._graph_member_finished() from public;
revoke execute on function conductor.enqueue_graph(jsonb, jsonb, jsonb) from public;
revoke execute on function conductor.dependency_results(bigint) from public;
revoke execute on function conductor.graph(bigint) from public;
revoke execute on function conductor.cancel_graph(bigint) from public;
grant execute on function conductor.enqueue_graph(jsonb, jsonb, jsonb) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.dependency_results(bigint) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.graph(bigint) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.cancel_graph(bigint) to conductor_client, conductor_admin;

commit;
