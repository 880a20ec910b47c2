-- Deploy conductor:schema/graphs to pg
--
-- Graphs and batches, declared (issue 31): a set of tasks enqueued at once with
-- dependencies between them, and callbacks when every member has finished or
-- when the first fails (functions/graphs).
--
--   conductor.graphs          one row per graph: its callbacks as declared (a
--                             task spec each) and the tasks enqueued for them,
--                             and when cancel_graph cancelled it
--   conductor.graph_nodes     a member: its task, its name in the graph, and
--                             whether it runs when a dependency did not succeed
--   conductor.graph_edges     task_id runs after dependency_id
--   conductor.tasks.graph_id  the graph a task is a member of; NULL for every
--                             other task, so the trigger of functions/graphs
--                             (WHEN graph_id is not null) and the partial index
--                             below cost an ordinary task a null test each
--
-- A member with a dependency not yet finished is stored 'waiting' (wait_for
-- 'dependencies', no wait_until): claim takes only queued tasks and the reaper
-- ends only waits with a deadline, so nothing but its dependencies wakes it.
-- No new status: every status list, the stats, the dashboard and the drivers
-- already know 'waiting'.
--
-- graph_id is a new nullable column without a default: adding it rewrites no row,
-- and a task in flight across an upgrade is in no graph, which is true.

begin;
set local role conductor_owner;

create table conductor.graphs (
  id                  bigint generated always as identity primary key,
  created_at          timestamptz not null,
  on_complete         jsonb,          -- an enqueue_many element, or NULL
  on_failure          jsonb,          -- an enqueue_many element, or NULL
  on_complete_task_id bigint,         -- the callback's task, once enqueued
  on_failure_task_id  bigint,
  cancelled_at        timestamptz     -- cancel_graph: no callback is enqueued after it
);
comment on table conductor.graphs is
  'A graph (or batch) of tasks declared by enqueue_graph: its callbacks (task specs) and the tasks enqueued '
  'for them, each at most once. Written by enqueue_graph, cancel_graph and the trigger tasks_graph_member_finished.';

create table conductor.graph_nodes (
  task_id        bigint primary key,
  graph_id       bigint not null,
  name           text not null,
  run_on_failure boolean not null default false,
  layer          integer not null,    -- the longest chain of dependencies before it (0: none)
  unique (graph_id, name)
);
comment on table conductor.graph_nodes is
  'The members of a graph: their task, name (unique in the graph) and layer (the dashboard draws by it). run_on_failure: the task runs once its '
  'dependencies have finished whatever their outcome, instead of being cancelled when one did not succeed.';

create table conductor.graph_edges (
  task_id       bigint not null,      -- runs after
  dependency_id bigint not null,      -- this one has finished
  primary key (dependency_id, task_id)
);
create index graph_edges_task on conductor.graph_edges (task_id);
comment on table conductor.graph_edges is
  'task_id runs after dependency_id (both members of one graph).';

alter table conductor.tasks add column graph_id bigint;
comment on column conductor.tasks.graph_id is
  'The graph (conductor.graphs) the task is a member of, from enqueue_graph; NULL: in none.';
create index tasks_graph on conductor.tasks (graph_id, status) where graph_id is not null;

revoke all on conductor.graphs, conductor.graph_nodes, conductor.graph_edges from public;
grant select on conductor.graphs, conductor.graph_nodes, conductor.graph_edges
  to conductor_client, conductor_worker, conductor_admin;

commit;
