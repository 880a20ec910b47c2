-- A member that fails for good cancels the members after it (and after them) that do not
-- run_on_failure, their error naming it; a run_on_failure member runs once its dependencies
-- have finished, and reads their outcomes. Members that do not depend on it are untouched.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

set local role conductor_client;
create temporary table g on commit drop as
  select * from conductor.enqueue_graph($$[
    {"name": "a", "kind": "k", "queue": "graph-fail"},
    {"name": "x", "kind": "k", "queue": "graph-fail-other"},
    {"name": "b", "kind": "k", "queue": "graph-fail", "after": ["a"]},
    {"name": "c", "kind": "k", "queue": "graph-fail", "after": ["b", "x"]},
    {"name": "r", "kind": "k", "queue": "graph-fail", "after": ["c"], "run_on_failure": true},
    {"name": "s", "kind": "k", "queue": "graph-fail", "after": ["r"]}]$$);
reset role;
select (select task_id from g where name = 'a') as a, (select task_id from g where name = 'b') as b,
       (select task_id from g where name = 'c') as c, (select task_id from g where name = 'r') as r,
       (select task_id from g where name = 's') as s, (select task_id from g where name = 'x') as x \gset

set local role conductor_worker;
select attempt_id as fa from conductor.claim('w1', array['graph-fail'], 1) \gset
select conductor.fail(:fa, 'boom');
reset role;
select results_eq(format($$select id, status::text, error from conductor.tasks where id in (%s, %s) order by id desc$$, :b, :c),
  format($$values (%s::bigint, 'cancelled'::text, 'cancelled: dependency ''a'' (task %s) ended failed'::text),
                  (%s, 'cancelled', 'cancelled: dependency ''a'' (task %s) ended failed')$$, :b, :a, :c, :a),
  'b, after a, and c, after b, are cancelled, naming a.');
select results_eq(format($$select status::text, wait_for from conductor.tasks where id = %s$$, :r),
  $$values ('queued'::text, null::text)$$,
  'r runs on failure: its dependency c finished (cancelled), so it is queued.');
select results_eq(format($$select status::text from conductor.tasks where id in (%s, %s) order by id desc$$, :x, :s),
  $$values ('queued'::text), ('waiting')$$,
  'x, not after a, is still queued; s, after r, waits for r.');
select is(conductor.dependency_results(:r)->'c'->>'status', 'cancelled', 'r reads that c was cancelled.');

set local role conductor_worker;
select attempt_id as ra from conductor.claim('w1', array['graph-fail'], 1) \gset
select conductor.complete(:ra, '{"ok": true}');
reset role;
select is((select status::text from conductor.tasks where id = :s), 'queued', 'r succeeded: s is queued.');
set local role conductor_worker;
select attempt_id as xa from conductor.claim('w1', array['graph-fail-other'], 1) \gset
select conductor.complete(:xa, null);
reset role;
select is((select status::text from conductor.tasks where id = :c), 'cancelled', 'x finishing later changes nothing of c.');

select * from finish();
rollback;
