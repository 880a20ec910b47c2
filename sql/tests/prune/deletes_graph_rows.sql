-- prune() deletes a graph member's node and edges with it, and the graph's own row with
-- its last member, so a pruned graph leaves nothing behind; a graph with a member kept
-- keeps its rows.
begin;
select plan(4);
\ir ../helpers.psql

set local conductor.fake_now = '2030-01-01 00:00:00+00';
create temporary table g on commit drop as
  select * from conductor.enqueue_graph($$[
    {"name": "a", "kind": "k", "queue": "pr-graph"},
    {"name": "b", "kind": "k", "queue": "pr-graph", "after": ["a"]}]$$,
    on_complete => '{"kind": "done", "queue": "pr-graph"}');
select min(graph_id) as graph from g \gset
-- a, then b, then the callback: each claimed and completed in turn
select conductor.complete(a.attempt_id, '{}') from conductor.claim('w', array['pr-graph'], 1) a;
select conductor.complete(a.attempt_id, '{}') from conductor.claim('w', array['pr-graph'], 1) a;
select conductor.complete(a.attempt_id, '{}') from conductor.claim('w', array['pr-graph'], 1) a;
select is((select count(*) from conductor.tasks t join g on g.task_id = t.id where t.status = 'succeeded'), 3::bigint,
  'Setup: both members and the callback succeeded.');
-- a second graph, still running, keeps everything
create temporary table g2 on commit drop as
  select * from conductor.enqueue_graph($$[{"name": "x", "kind": "k", "queue": "pr-graph-kept"}]$$);
select min(graph_id) as kept from g2 \gset

set local conductor.fake_now = '2030-01-20 00:00:00+00';
select is(conductor.prune(interval '7 days'), 3::bigint, 'The graph''s three tasks are pruned.');
select is((select array[(select count(*) from conductor.graphs where id = :graph),
                        (select count(*) from conductor.graph_nodes where graph_id = :graph),
                        (select count(*) from conductor.graph_edges e join g on g.task_id in (e.task_id, e.dependency_id))]),
  array[0, 0, 0]::bigint[], 'Its graph, nodes and edges went with them.');
select is((select array[(select count(*) from conductor.graphs where id = :kept),
                        (select count(*) from conductor.graph_nodes where graph_id = :kept)]),
  array[1, 1]::bigint[], 'A graph whose member is unfinished keeps its rows.');

select * from finish();
rollback;
