-- cancel_graph cancels every unfinished task of a graph, as cancel() cancels a tree: waiting
-- and queued members, a running one (its attempt closed), a child it spawned, and the
-- callbacks; finished members keep their outcome; no callback is queued after it. An unknown
-- graph is QC215; a worker may not cancel a graph.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

set local role conductor_client;
create temporary table g on commit drop as
  select * from conductor.enqueue_graph($$[
    {"name": "a", "kind": "k", "queue": "graph-cancel"},
    {"name": "b", "kind": "k", "queue": "graph-cancel"},
    {"name": "c", "kind": "k", "queue": "graph-cancel", "after": ["a", "b"]}]$$,
    on_complete => '{"kind": "done", "queue": "graph-cancel-done"}');
reset role;
select (select min(graph_id) from g) as graph, (select task_id from g where role = 'on_complete') as oc \gset

set local role conductor_worker;
select attempt_id as a1, task_id as t1 from conductor.claim('w1', array['graph-cancel'], 1) \gset
select conductor.complete(:a1, '{"n": 1}');
select attempt_id as a2, task_id as t2 from conductor.claim('w1', array['graph-cancel'], 1) \gset
select conductor.spawn(:a2, 'kid', 'kid', '{}', 'graph-cancel-kids') as kid \gset
select throws_ok(format('select conductor.cancel_graph(%s)', :graph), '42501', null,
  'A worker may not cancel a graph.');
set local role conductor_client;
set local conductor.fake_now = '2030-01-01 00:01:00+00';
select is(conductor.cancel_graph(:graph), 4, 'cancel_graph cancels the running member, its child, the waiting member and the callback.');
reset role;
select set_eq(format($$select id, status::text from conductor.tasks where id in (%s, %s, %s, %s, %s)$$,
                         :t1, :t2, :kid, (select task_id from g where name = 'c'), :oc),
  format($$values (%s::bigint, 'cancelled'::text), (%s, 'succeeded'), (%s, 'cancelled'), (%s, 'cancelled'), (%s, 'cancelled')$$,
         :kid, :t1, :t2, (select task_id from g where name = 'c'), :oc),
  'The finished member keeps its outcome; every other task of the graph is cancelled.');
select is((select outcome from conductor.attempts where id = :a2), 'cancelled', 'The running member''s attempt is closed.');
select isnt((select cancelled_at from conductor.graphs where id = :graph), null, 'The graph is marked cancelled.');
set local role conductor_client;
select is(conductor.cancel_graph(:graph), 0, 'A second cancel_graph cancels nothing more.');
select throws_ok('select conductor.cancel_graph(-1)', 'QC215', 'graph -1 does not exist', 'An unknown graph is QC215.');

select * from finish();
rollback;
