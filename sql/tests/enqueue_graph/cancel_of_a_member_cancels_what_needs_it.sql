-- cancel(task_id) of one member, as a client: what runs after it is cancelled as after a
-- failure (naming it), a run_on_failure member after it is queued, the graph's on_failure is
-- queued naming the cancelled member, and members that do not need it are untouched.
begin;
select plan(4);
\ir ../helpers.psql

set local role conductor_client;
create temporary table g on commit drop as
  select * from conductor.enqueue_graph($$[
    {"name": "a", "kind": "k", "queue": "graph-cancel-one"},
    {"name": "b", "kind": "k", "queue": "graph-cancel-one", "after": ["a"]},
    {"name": "c", "kind": "k", "queue": "graph-cancel-one", "after": ["b"]},
    {"name": "r", "kind": "k", "queue": "graph-cancel-one", "after": ["a"], "run_on_failure": true},
    {"name": "x", "kind": "k", "queue": "graph-cancel-one"}]$$,
    on_failure => '{"kind": "alarm", "queue": "graph-cancel-one-cb"}');
select (select task_id from g where name = 'a') as a \gset
select is(conductor.cancel(:a), 1, 'cancel cancels the member itself (a member is a root of its own).');
reset role;
select results_eq($$select g.name, t.status::text, coalesce(t.error, '') from g join conductor.tasks t on t.id = g.task_id
                     where g.role = 'member' order by g.name$$,
  format($$values ('a'::text, 'cancelled'::text, 'cancelled'::text),
                  ('b', 'cancelled', 'cancelled: dependency ''a'' (task %1$s) ended cancelled'),
                  ('c', 'cancelled', 'cancelled: dependency ''a'' (task %1$s) ended cancelled'),
                  ('r', 'queued', ''), ('x', 'queued', '')$$, :a),
  'b and c, after a, are cancelled naming it; r runs on failure; x does not need a.');
select is((select payload->'graph'->'failed'->>'name' from conductor.tasks t join g on g.task_id = t.id
            where g.role = 'on_failure'), 'a', 'on_failure is queued, naming the cancelled member.');
select is((select status::text from conductor.tasks t join g on g.task_id = t.id where g.role = 'on_failure'), 'queued',
  'on_failure is queued.');

select * from finish();
rollback;
