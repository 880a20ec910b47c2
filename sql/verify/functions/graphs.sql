-- Verify conductor:functions/graphs on pg

begin;

select 1 / (count(*) = 2)::int
  from conductor.enqueue_graph('[{"name": "a", "kind": "verify"}, {"name": "b", "kind": "verify", "after": ["a"]}]');
select 1 / (count(*) = 2)::int
  from conductor.graph((select max(id) from conductor.graphs));
select 1 / pg_catalog.has_function_privilege('conductor_client', 'conductor.enqueue_graph(jsonb, jsonb, jsonb)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_worker', 'conductor.cancel_graph(bigint)', 'execute'))::int;

rollback;
