-- cancel_graph racing the completion of a dependency, in two sessions. The worker completes a
-- and leaves its transaction open: it holds a, and c (after a) which it just queued. The
-- client's cancel_graph waits for it, then cancels what is unfinished: c, though queued a
-- moment ago, and the callback; a keeps its result. No callback is queued after the cancel.
-- dblink sessions: 'stage' (roles, tasks, cleanup), 'worker' (conductor_worker), 'client'
-- (conductor_client).
begin;
select plan(4);
\ir ../helpers.psql
create extension if not exists dblink;

select 'graph-cancel-race-' || pg_backend_pid() as q \gset
select 't_graph_cr_worker_' || pg_backend_pid() as worker_role \gset
select 't_graph_cr_client_' || pg_backend_pid() as client_role \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c0 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'worker_role')) as r1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_client', :'client_role')) as r2 \gset
select dblink_connect('worker', conductor_tests.conninfo() || ' user=' || :'worker_role') as c1 \gset
select dblink_connect('client', conductor_tests.conninfo() || ' user=' || :'client_role') as c2 \gset
select pid as client_pid from dblink('client', 'select pg_backend_pid()') as r(pid int) \gset

select graph_id as graph from dblink('stage', format($s$
  select min(graph_id) from conductor.enqueue_graph(
    '[{"name": "a", "kind": "k", "queue": "%1$s"}, {"name": "c", "kind": "k", "queue": "%1$s-c", "after": ["a"]}]',
    on_complete => '{"kind": "done", "queue": "%1$s-c"}')$s$, :'q')) as r(graph_id bigint) \gset
select a as a1 from dblink('worker', format($s$select attempt_id from conductor.claim(%L, array[%L], 1)$s$,
                                            'w-' || :'q', :'q')) as r(a bigint) \gset

select dblink_exec('worker', 'begin') as b1 \gset
select x as done1 from dblink('worker', format('select conductor.complete(%s, ''{"n": 1}'')::text', :a1)) as r(x text) \gset
select dblink_send_query('client', format('select conductor.cancel_graph(%s)', :graph)) as s2 \gset
select ok(conductor_tests.await_lock_wait(:client_pid), 'cancel_graph waits for the completing transaction.');
select dblink_exec('worker', 'commit') as k1 \gset
select is((select n from dblink_get_result('client') as r(n integer)), 2, 'cancel_graph then cancels c and the callback.');
select * from dblink_get_result('client') as r(n integer);

create function pg_temp.stage_rows(query text) returns setof text language sql as $fn$
  select r.line from dblink('stage', query) as r(line text)
$fn$;
select results_eq(format($$select * from pg_temp.stage_rows(%L)$$, format(
    'select coalesce(name, role) || '' '' || status from conductor.graph(%s) order by layer', :graph)),
  $$values ('a succeeded'::text), ('c cancelled'), ('on_complete cancelled')$$,
  'a keeps its result; c and the callback are cancelled.');
select is((select s from pg_temp.stage_rows(format(
    'select coalesce(payload->>''graph'', ''none'') from conductor.tasks t
      join conductor.graphs g on g.on_complete_task_id = t.id where g.id = %s', :graph)) s), 'none',
  'The callback was never released.');

select dblink_disconnect('worker') as x1 \gset
select dblink_disconnect('client') as x2 \gset
select dblink_exec('stage', format($s$delete from conductor.attempts a using conductor.tasks t
  where a.task_id = t.id and t.queue in (%L, %L)$s$, :'q', :'q' || '-c')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.graph_edges e using conductor.graph_nodes n where n.task_id = e.task_id and n.graph_id = %s', :graph)) as d2 \gset
select dblink_exec('stage', format('delete from conductor.graph_nodes where graph_id = %s', :graph)) as d3 \gset
select dblink_exec('stage', format('delete from conductor.graphs where id = %s', :graph)) as d4 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue in (%L, %L)', :'q', :'q' || '-c')) as d5 \gset
select dblink_exec('stage', format('delete from conductor.workers where id = %L', 'w-' || :'q')) as d6 \gset
select dblink_exec('stage', format('drop role %I', :'worker_role')) as r3 \gset
select dblink_exec('stage', format('drop role %I', :'client_role')) as r4 \gset
select dblink_disconnect('stage') as x0 \gset

select * from finish();
rollback;
