-- A graph runs in dependency order: a and b are queued at once; c, after both, waits until
-- the second of them succeeds, then is queued and reads their results by name
-- (dependency_results); d, after c, waits for c. Enqueued as conductor_client, run as
-- conductor_worker.
begin;
select plan(10);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

set local role conductor_client;
create temporary table g on commit drop as
  select * from conductor.enqueue_graph($$[
    {"name": "d", "kind": "k", "queue": "graph-order", "after": ["c"]},
    {"name": "c", "kind": "k", "queue": "graph-order", "after": ["a", "b"], "payload": {"n": 3}},
    {"name": "a", "kind": "k", "queue": "graph-order"},
    {"name": "b", "kind": "k", "queue": "graph-order"}]$$);
reset role;
select (select task_id from g where name = 'a') as a, (select task_id from g where name = 'b') as b,
       (select task_id from g where name = 'c') as c, (select task_id from g where name = 'd') as d,
       (select min(graph_id) from g) as graph \gset

select is((select array_agg(name order by name) from g where role = 'member'), '{a,b,c,d}',
  'enqueue_graph answers a row per member, named.');
select results_eq(format($$select id, status::text, wait_for, graph_id from conductor.tasks
                            where id in (%s, %s, %s, %s) order by id desc$$, :a, :b, :c, :d),
  format($$values (%s::bigint, 'queued'::text, null::text, %s::bigint), (%s, 'queued', null, %s),
                  (%s, 'waiting', 'dependencies', %s), (%s, 'waiting', 'dependencies', %s)$$,
         greatest(:a, :b), :graph, least(:a, :b), :graph, :c, :graph, :d, :graph),
  'The members without dependencies are queued; the others wait for their dependencies.');
select ok(:c < least(:a, :b) and :d < :c, 'A dependent has a smaller id than its dependencies (the lock order).');

set local role conductor_worker;
select attempt_id as first, task_id as first_task from conductor.claim('w1', array['graph-order'], 1) \gset
select attempt_id as second from conductor.claim('w1', array['graph-order'], 1) \gset
select is((select count(*)::integer from conductor.claim('w1', array['graph-order'], 10)), 0,
  'Nothing else is claimable while a and b run.');
select conductor.complete(:first, '{"from": "first"}');
reset role;
select is((select status::text from conductor.tasks where id = :c), 'waiting',
  'c still waits when one of its dependencies has finished.');
set local conductor.fake_now = '2030-01-01 00:00:05+00';
set local role conductor_worker;
select conductor.complete(:second, '{"from": "second"}');
reset role;
select results_eq(format($$select status::text, wait_for, run_at from conductor.tasks where id = %s$$, :c),
  $$values ('queued'::text, null::text, '2030-01-01 00:00:05+00'::timestamptz)$$,
  'When the second finishes, c is queued, due now.');
set local role conductor_worker;
select results_eq(
  format($$select task_id, payload from conductor.claim('w1', array['graph-order'], 10)$$),
  format($$values (%s::bigint, '{"n": 3}'::jsonb)$$, :c),
  'c is claimed, its payload as given.');
select is(conductor.dependency_results(:c),
  format('{"a": {"task_id": %s, "status": "succeeded", "result": {"from": "%s"}, "error": null},
           "b": {"task_id": %s, "status": "succeeded", "result": {"from": "%s"}, "error": null}}',
         :a, case when :a = :first_task then 'first' else 'second' end,
         :b, case when :b = :first_task then 'first' else 'second' end)::jsonb,
  'c reads its dependencies'' results by name.');
select is(conductor.dependency_results(:a), '{}'::jsonb, 'A member without dependencies has none.');
reset role;
select is((select status::text from conductor.tasks where id = :d), 'waiting', 'd waits for c.');

select * from finish();
rollback;
