-- The graph functions exist, are SECURITY DEFINER where granted, and are granted to the roles
-- that need them: enqueue_graph, dependency_results and graph to every role, cancel_graph to
-- clients and admins (as cancel). The trigger fires only for a graph's members.
begin;
select plan(15);

select has_table('conductor', 'graphs', 'conductor.graphs exists.');
select has_column('conductor', 'tasks', 'graph_id', 'conductor.tasks has the column graph_id.');
select is_definer('conductor', 'enqueue_graph', ARRAY['jsonb', 'jsonb', 'jsonb']::name[], 'conductor.enqueue_graph is SECURITY DEFINER.');
select is_definer('conductor', 'cancel_graph', ARRAY['bigint']::name[], 'conductor.cancel_graph is SECURITY DEFINER.');
select is_definer('conductor', 'graph', ARRAY['bigint']::name[], 'conductor.graph is SECURITY DEFINER.');
select is_definer('conductor', 'dependency_results', ARRAY['bigint']::name[], 'conductor.dependency_results is SECURITY DEFINER.');
select function_privs_are('conductor', 'enqueue_graph', ARRAY['jsonb', 'jsonb', 'jsonb']::name[], 'conductor_worker', ARRAY['EXECUTE'],
  'conductor_worker may execute conductor.enqueue_graph.');
select function_privs_are('conductor', 'cancel_graph', ARRAY['bigint']::name[], 'conductor_client', ARRAY['EXECUTE'],
  'conductor_client may execute conductor.cancel_graph.');
select function_privs_are('conductor', 'cancel_graph', ARRAY['bigint']::name[], 'conductor_worker', ARRAY[]::text[],
  'conductor_worker may not execute conductor.cancel_graph.');
select function_privs_are('conductor', 'dependency_results', ARRAY['bigint']::name[], 'conductor_worker', ARRAY['EXECUTE'],
  'conductor_worker may execute conductor.dependency_results.');
select ok(not has_function_privilege('public', 'conductor.enqueue_graph(jsonb, jsonb, jsonb)', 'execute'),
  'PUBLIC may not execute conductor.enqueue_graph.');
select ok(not has_function_privilege('conductor_client', 'conductor._graph_member_finished()', 'execute'),
  'conductor_client may not execute the trigger function.');
select ok(not has_function_privilege('conductor_worker', 'conductor._graph_release(bigint[], jsonb)', 'execute'),
  'conductor_worker may not release graph tasks itself.');
select ok(not has_table_privilege('conductor_client', 'conductor.graph_nodes', 'insert'),
  'conductor_client may not write graph_nodes.');
select ok((select pg_catalog.pg_get_triggerdef(t.oid) like '%WHEN ((new.graph_id IS NOT NULL))%'
             from pg_catalog.pg_trigger t where t.tgname = 'tasks_graph_member_finished'),
  'tasks_graph_member_finished fires only for a task in a graph.');

select * from finish();
rollback;
