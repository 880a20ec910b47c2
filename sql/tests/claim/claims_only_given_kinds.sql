-- claim(kinds => ...) leases only tasks of those kinds, in every pick: one queue, several
-- or all queues, and the concurrency-key probe and pick. Tasks of other kinds stay queued,
-- untouched (not even a new attempt), for a worker that has their handler. Claimed as
-- conductor_worker, the role claim is granted to.
begin;
select plan(9);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

-- one queue; the kind-b task is at its head (higher priority)
select conductor.enqueue('kind-a', '{}', 'kinds-q') as a1 \gset
select conductor.enqueue('kind-b', '{}', 'kinds-q', priority => 5) as b1 \gset
select conductor.enqueue('kind-a', '{}', 'kinds-q') as a2 \gset
-- two more queues, for the several-queues pick
select conductor.enqueue('kind-b', '{}', 'kinds-q2', priority => 9) as b2 \gset
select conductor.enqueue('kind-c', '{}', 'kinds-q2') as c1 \gset
-- keyed tasks: the key probe must not pick (nor lock) a key of another kind
select conductor.enqueue('kind-b', '{}', 'kinds-keyed', priority => 5, concurrency_key => 'key-b') as kb \gset
select conductor.enqueue('kind-a', '{}', 'kinds-keyed', concurrency_key => 'key-a') as ka \gset
select conductor_tests.task(:b1) as b1_before, conductor_tests.task(:b2) as b2_before,
       conductor_tests.task(:kb) as kb_before \gset

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

select results_eq(
  $$select task_id from conductor.claim('w-a', array['kinds-q'], 10, kinds => array['kind-a'])$$,
  format($$values (%s::bigint), (%s)$$, :a1, :a2),
  'From one queue, a claim for kind-a gets the kind-a tasks, in claim order, and steps over the kind-b task at the head.');
select is_empty(
  $$select task_id from conductor.claim('w-a', array['kinds-q', 'kinds-q2'], 10, kinds => array['kind-a'])$$,
  'From several queues, a claim for kind-a finds none left: kind-b and kind-c tasks are not its.');
select results_eq(
  $$select task_id from conductor.claim('w-c', null, 10, kinds => array['kind-c', 'kind-x'])$$,
  format($$values (%s::bigint)$$, :c1),
  'From every queue, a claim for kind-c (and a kind nobody enqueued) gets the kind-c task only.');
select results_eq(
  $$select task_id from conductor.claim('w-a', array['kinds-keyed'], 10, kinds => array['kind-a'])$$,
  format($$values (%s::bigint)$$, :ka),
  'With concurrency keys, a claim for kind-a gets the kind-a keyed task, not the kind-b one ahead of it.');
reset role;
-- which slots this transaction holds: another session's SKIP LOCKED read leaves them out
create extension if not exists dblink;
select is((select string_agg(k, ',') from dblink(conductor_tests.conninfo(), format(
             $$select k from unnest(array['key-a', 'key-b']) k
                where not exists (select from conductor.concurrency_slots s
                                   where s.slot = conductor._concurrency_slot(k) for update skip locked)$$)) as x(k text)),
  'key-a', 'The key probe locked one key''s slot: key-a''s, not that of the kind-b task''s key.');

select is(conductor_tests.task(:b1), :'b1_before'::jsonb,
  'The kind-b task of the first queue is untouched: queued, attempt 0, no attempt id.');
select is(conductor_tests.task(:b2), :'b2_before'::jsonb, 'So is the kind-b task of the second queue.');
select is(conductor_tests.task(:kb), :'kb_before'::jsonb, 'So is the keyed kind-b task.');
select is((select count(*) from conductor.attempts a join conductor.tasks t on t.id = a.task_id
            where t.kind = 'kind-b'), 0::bigint,
  'No attempt was recorded for a kind-b task.');

select * from finish();
rollback;
