-- A batch's callbacks wait from the start; on_failure is queued at the first member that does
-- not succeed (its payload's "graph" naming it), and not again at a second; on_complete is
-- queued when the last member finishes, with the members' statuses counted. With every member
-- succeeding, on_complete runs and on_failure is cancelled, no failure calling for it.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

set local role conductor_client;
create temporary table g on commit drop as
  select * from conductor.enqueue_graph($$[
    {"name": "a", "kind": "k", "queue": "graph-cb"},
    {"name": "b", "kind": "k", "queue": "graph-cb"},
    {"name": "c", "kind": "k", "queue": "graph-cb"}]$$,
    on_complete => '{"kind": "done", "queue": "graph-cb-done", "payload": {"to": "ops"}}',
    on_failure => '{"kind": "alarm", "queue": "graph-cb-done"}');
reset role;
select (select task_id from g where role = 'on_complete') as oc, (select task_id from g where role = 'on_failure') as ofl,
       (select min(graph_id) from g) as graph \gset
select results_eq(format($$select status::text, wait_for from conductor.tasks where id in (%s, %s)$$, :oc, :ofl),
  $$values ('waiting'::text, 'graph'::text), ('waiting', 'graph')$$, 'Both callbacks wait for the graph.');

set local role conductor_worker;
select attempt_id as a1, task_id as t1 from conductor.claim('w1', array['graph-cb'], 1) \gset
select attempt_id as a2, task_id as t2 from conductor.claim('w1', array['graph-cb'], 1) \gset
select attempt_id as a3 from conductor.claim('w1', array['graph-cb'], 1) \gset
select conductor.fail(:a1, 'first');
reset role;
select results_eq(format($$select status::text, payload from conductor.tasks where id = %s$$, :ofl),
  format($$values ('queued'::text, '{"graph": {"graph_id": %s, "failed": {"name": "%s", "task_id": %s, "status": "failed", "error": "first"}}}'::jsonb)$$,
         :graph, (select name from g where task_id = :t1), :t1),
  'The first failure queues on_failure, naming the member in its payload.');
set local role conductor_worker;
select conductor.fail(:a2, 'second');
reset role;
select is((select payload->'graph'->'failed'->>'error' from conductor.tasks where id = :ofl), 'first',
  'A second failure does not queue it again.');
select is((select status::text from conductor.tasks where id = :oc), 'waiting', 'on_complete waits for the last member.');
set local role conductor_worker;
select conductor.complete(:a3, null);
reset role;
select results_eq(format($$select status::text, payload from conductor.tasks where id = %s$$, :oc),
  format($$values ('queued'::text, '{"to": "ops", "graph": {"graph_id": %s, "statuses": {"failed": 2, "succeeded": 1}}}'::jsonb)$$, :graph),
  'The last member queues on_complete, the statuses counted in its payload beside its own keys.');

-- every member succeeds: on_failure is cancelled
set local role conductor_client;
create temporary table h on commit drop as
  select * from conductor.enqueue_graph('[{"name": "a", "kind": "k", "queue": "graph-cb2"}]',
    on_failure => '{"kind": "alarm", "queue": "graph-cb-done"}');
set local role conductor_worker;
select conductor.complete(attempt_id, null) from conductor.claim('w1', array['graph-cb2'], 1);
reset role;
select results_eq(format($$select status::text, error from conductor.tasks where id = %s$$,
                         (select task_id from h where role = 'on_failure')),
  format($$values ('cancelled'::text, 'cancelled: every member of graph %s succeeded'::text)$$, (select min(graph_id) from h)),
  'With every member succeeded, on_failure is cancelled, saying why.');
select is((select count(*)::integer from conductor.tasks where queue = 'graph-cb-done'), 3,
  'Three callback tasks in all: one per declaration, none added.');

select * from finish();
rollback;
