-- Revert conductor:schema/graphs from pg

begin;

drop index conductor.tasks_graph;
alter table conductor.tasks drop column graph_id;
drop table conductor.graph_edges;
drop table conductor.graph_nodes;
drop table conductor.graphs;

commit;
