-- A released member keeps a run_at later than its release (it was asked for), and its deadline
-- to start (expires_in) counts from its release: the reaper never ends a member that waits for
-- its dependencies, however long they take.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create temporary table g on commit drop as
  select * from conductor.enqueue_graph($$[
    {"name": "a", "kind": "k", "queue": "graph-release"},
    {"name": "late", "kind": "k", "queue": "graph-release", "after": ["a"], "run_at": "2030-01-01 05:00:00+00"},
    {"name": "quick", "kind": "k", "queue": "graph-release", "after": ["a"], "expires_in": "10 minutes"}]$$);
select (select task_id from g where name = 'late') as late, (select task_id from g where name = 'quick') as quick \gset

-- a runs for an hour; reaping meanwhile ends nothing of the graph
set local conductor.fake_now = '2030-01-01 01:00:00+00';
select attempt_id as aa from conductor.claim('w1', array['graph-release'], 1) \gset
select conductor.reap();
select is((select status::text from conductor.tasks where id = :quick), 'waiting',
  'A member waiting for its dependencies is not expired, though its expires_in passed since it was enqueued.');
select conductor.complete(:aa, null);
select results_eq(format($$select status::text, run_at, expires_at from conductor.tasks where id = %s$$, :quick),
  $$values ('queued'::text, '2030-01-01 01:00:00+00'::timestamptz, '2030-01-01 01:10:00+00'::timestamptz)$$,
  'Released, it is due now and its deadline to start is expires_in from now.');
select results_eq(format($$select status::text, run_at from conductor.tasks where id = %s$$, :late),
  $$values ('queued'::text, '2030-01-01 05:00:00+00'::timestamptz)$$,
  'A member asked to run later keeps its run_at.');
set local conductor.fake_now = '2030-01-01 01:11:00+00';
select conductor.reap();
select is((select status::text from conductor.tasks where id = :quick), 'expired',
  'Not started within expires_in of its release, it expires as any task does.');

select * from finish();
rollback;
