-- Revert conductor:functions/graphs from pg

begin;
set local role conductor_owner;

drop trigger tasks_graph_member_finished on conductor.tasks;
drop function conductor.cancel_graph(bigint);
drop function conductor.graph(bigint);
drop function conductor.dependency_results(bigint);
drop function conductor._graph_member_finished();
drop function conductor.enqueue_graph(jsonb, jsonb, jsonb);
drop function conductor._graph_release(bigint[], jsonb);
drop function conductor._check_graph_callback(text, jsonb);
drop function conductor._graph_order(jsonb);

commit;
