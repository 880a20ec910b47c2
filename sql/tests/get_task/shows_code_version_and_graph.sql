-- get_task (and watch, which answers the same columns) shows the code version a run
-- started on (recorded by its first claim with code_versions) and the graph it belongs to.
begin;
select plan(4);
\ir ../helpers.psql

select conductor.register_worker('w-gt-cv') as r \gset
select min(graph_id) as g from conductor.enqueue_graph(
  '[{"name": "a", "kind": "k", "queue": "gt-cv"}, {"name": "b", "kind": "k", "queue": "gt-cv-b", "after": ["a"]}]') \gset
select task_id as a from conductor.graph(:g) where name = 'a' \gset
select task_id as b from conductor.graph(:g) where name = 'b' \gset
select task_id as claimed from conductor.claim('w-gt-cv', array['gt-cv'], 1, code_versions => array['v7', 'v6']) \gset

select is(:claimed::bigint, :a::bigint, '(The claim takes the graph''s first member.)');
select is((select (code_version, graph_id) from conductor.get_task(:a)), ('v7'::text, :g::bigint),
  'The claimed member shows the claimer''s current code version and its graph.');
select is((select (code_version, graph_id) from conductor.watch(:b)), (null::text, :g::bigint),
  'A member not claimed yet shows no code version, and its graph, through watch too.');
select conductor.enqueue('k', '{}', 'gt-cv-plain') as plain \gset
select is((select (code_version, graph_id) from conductor.get_task(:plain)), (null::text, null::bigint),
  'A task of no graph, never claimed: neither.');

select * from finish();
rollback;
