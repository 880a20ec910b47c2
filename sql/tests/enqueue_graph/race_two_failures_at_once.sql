-- Two members fail at once in two sessions (two conductor_worker logins): the first fails a
-- and leaves its transaction open (it holds the on_failure callback it just queued); the
-- second's fail of b waits for it, then finds the callback queued: on_failure is queued once,
-- naming a, and c (after both) is cancelled once.
-- dblink sessions: 'stage' (roles, tasks, cleanup), 'w1' and 'w2' (conductor_worker only).
begin;
select plan(4);
\ir ../helpers.psql
create extension if not exists dblink;

select 'graph-race-fail-' || pg_backend_pid() as q \gset
select 't_graph_rf_w1_' || pg_backend_pid() as w1_role \gset
select 't_graph_rf_w2_' || pg_backend_pid() as w2_role \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c0 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'w1_role')) as r1 \gset
select dblink_exec('stage', format('create role %I login in role conductor_worker', :'w2_role')) as r2 \gset
select dblink_connect('w1', conductor_tests.conninfo() || ' user=' || :'w1_role') as c1 \gset
select dblink_connect('w2', conductor_tests.conninfo() || ' user=' || :'w2_role') as c2 \gset
select pid as w2_pid from dblink('w2', 'select pg_backend_pid()') as r(pid int) \gset

select graph_id as graph from dblink('stage', format($s$
  select min(graph_id) from conductor.enqueue_graph(
    '[{"name": "a", "kind": "k", "queue": "%1$s"}, {"name": "b", "kind": "k", "queue": "%1$s"},
      {"name": "c", "kind": "k", "queue": "%1$s-c", "after": ["a", "b"]}]',
    on_failure => '{"kind": "alarm", "queue": "%1$s-cb"}')$s$, :'q')) as r(graph_id bigint) \gset
select a as a1, t as t1 from dblink('w1', format($s$select attempt_id, task_id from conductor.claim(%L, array[%L], 1)$s$,
                                                'w1-' || :'q', :'q')) as r(a bigint, t bigint) \gset
select a as a2 from dblink('w2', format($s$select attempt_id from conductor.claim(%L, array[%L], 1)$s$,
                                        'w2-' || :'q', :'q')) as r(a bigint) \gset
select dblink_exec('w2', $w$create function pg_temp.try_fail(attempt_id bigint) returns text
  language plpgsql as $fn$
  begin
    perform conductor.fail(attempt_id => try_fail.attempt_id, error => 'second');
    return 'ok';
  exception when others then
    return sqlstate;
  end $fn$$w$) as f1 \gset

select dblink_exec('w1', 'begin') as b1 \gset
select x as done1 from dblink('w1', format('select conductor.fail(%s, ''first'')::text', :a1)) as r(x text) \gset
select dblink_send_query('w2', format('select pg_temp.try_fail(%s)', :a2)) as s2 \gset
select ok(conductor_tests.await_lock_wait(:w2_pid), 'The second failure waits for the first''s transaction.');
select dblink_exec('w1', 'commit') as k1 \gset
select s as answer from dblink_get_result('w2') as r(s text) \gset
select * from dblink_get_result('w2') as r(s text);
-- fail waits 500 ms at most for a held row (functions/fail), then asks to be sent again
select case when :'answer' = '55P03'
            then (select s from dblink('w2', format('select pg_temp.try_fail(%s)', :a2)) as r(s text))
            else :'answer' end as answer \gset
select is(:'answer'::text, 'ok', 'The second failure is stored (at once, or sent again after 55P03).');

create function pg_temp.stage_rows(query text) returns setof text language sql as $fn$
  select r.line from dblink('stage', query) as r(line text)
$fn$;
select results_eq(format($$select * from pg_temp.stage_rows(%L)$$, format(
    'select coalesce(name, role) || '' '' || status from conductor.graph(%s) order by layer, name', :graph)),
  $$values ('a failed'::text), ('b failed'), ('c cancelled'), ('on_failure queued')$$,
  'Both failed, c is cancelled and on_failure queued.');
select is((select s from pg_temp.stage_rows(format(
    'select (payload->''graph''->''failed''->>''task_id'') || '' '' || (select count(*) from conductor.tasks where queue = %L)
       from conductor.tasks t join conductor.graphs g on g.on_failure_task_id = t.id where g.id = %s', :'q' || '-cb', :graph)) s),
  :t1 || ' 1', 'on_failure names the first failure, and is one task.');

select dblink_disconnect('w1') as x1 \gset
select dblink_disconnect('w2') as x2 \gset
select dblink_exec('stage', format($s$delete from conductor.attempts a using conductor.tasks t
  where a.task_id = t.id and t.queue in (%L, %L, %L)$s$, :'q', :'q' || '-c', :'q' || '-cb')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.graph_edges e using conductor.graph_nodes n where n.task_id = e.task_id and n.graph_id = %s', :graph)) as d2 \gset
select dblink_exec('stage', format('delete from conductor.graph_nodes where graph_id = %s', :graph)) as d3 \gset
select dblink_exec('stage', format('delete from conductor.graphs where id = %s', :graph)) as d4 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue in (%L, %L, %L)', :'q', :'q' || '-c', :'q' || '-cb')) as d5 \gset
select dblink_exec('stage', format('delete from conductor.workers where id in (%L, %L)', 'w1-' || :'q', 'w2-' || :'q')) as d6 \gset
select dblink_exec('stage', format('drop role %I', :'w1_role')) as r3 \gset
select dblink_exec('stage', format('drop role %I', :'w2_role')) as r4 \gset
select dblink_disconnect('stage') as x0 \gset

select * from finish();
rollback;
