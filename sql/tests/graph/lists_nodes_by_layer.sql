-- graph(graph_id) answers the dashboard's drawing: each member with its layer (the longest
-- chain of dependencies before it) and the ids it runs after, then the callbacks one layer
-- past the members. Read as conductor_client and conductor_worker; an unknown graph is QC215.
begin;
select plan(4);
\ir ../helpers.psql

set local role conductor_client;
create temporary table g on commit drop as
  select * from conductor.enqueue_graph($$[
    {"name": "a", "kind": "fetch", "queue": "graph-read"},
    {"name": "b", "kind": "fetch", "queue": "graph-read", "after": ["a"]},
    {"name": "c", "kind": "merge", "queue": "graph-read", "after": ["a", "b"]},
    {"name": "d", "kind": "fetch", "queue": "graph-read"}]$$,
    on_complete => '{"kind": "done", "queue": "graph-read"}');
select (select min(graph_id) from g) as graph, (select task_id from g where name = 'a') as a,
       (select task_id from g where name = 'b') as b, (select task_id from g where name = 'c') as c,
       (select task_id from g where name = 'd') as d, (select task_id from g where role = 'on_complete') as oc \gset

select results_eq(format('select task_id, name, role, kind, status::text, layer, after from conductor.graph(%s)', :graph),
  format($$values (%s::bigint, 'a'::text, 'member'::text, 'fetch'::text, 'queued'::text, 0, '{}'::bigint[]),
                  (%s, 'd', 'member', 'fetch', 'queued', 0, '{}'),
                  (%s, 'b', 'member', 'fetch', 'waiting', 1, array[%s]::bigint[]),
                  (%s, 'c', 'member', 'merge', 'waiting', 2, array[%s, %s]::bigint[]),
                  (%s, null, 'on_complete', 'done', 'waiting', 3, '{}')$$,
         :a, :d, :b, :a, :c, least(:a, :b), greatest(:a, :b), :oc),
  'The members by layer, with what each runs after, then the callback.');
select is((select count(*)::integer from conductor.graph(:graph) where error is null), 5, 'No task has an error yet.');
set local role conductor_worker;
select is((select count(*)::integer from conductor.graph(:graph)), 5, 'A worker reads the graph too.');
select throws_ok('select * from conductor.graph(-1)', 'QC215', 'graph -1 does not exist', 'An unknown graph is QC215.');

select * from finish();
rollback;
