-- Verify conductor:schema/graphs on pg

begin;

select graph_id::bigint from conductor.tasks where false;
select id::bigint, created_at::timestamptz, on_complete::jsonb, on_failure::jsonb, on_complete_task_id::bigint,
       on_failure_task_id::bigint, cancelled_at::timestamptz
  from conductor.graphs where false;
select task_id::bigint, graph_id::bigint, name::text, run_on_failure::boolean, layer::integer from conductor.graph_nodes where false;
select task_id::bigint, dependency_id::bigint from conductor.graph_edges where false;
select 1 / (not pg_catalog.has_table_privilege('conductor_client', 'conductor.graphs', 'insert'))::int;

rollback;
