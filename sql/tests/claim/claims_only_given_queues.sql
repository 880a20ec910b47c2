-- claim takes tasks only from the queues it is given; NULL means every queue.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'only-a') as a \gset
select conductor.enqueue('k', '{}', 'only-b') as b \gset
select conductor.enqueue('k', '{}', 'only-c') as c \gset
select conductor.enqueue('k', '{}', 'only-d') as d \gset

select is_empty($$select * from conductor.claim('w1', array['only-none'], 10)$$,
  'A queue with no tasks gives nothing, though other queues have ready tasks.');
select results_eq($$select task_id, queue from conductor.claim('w1', array['only-a'], 10)$$,
  format('values (%s::bigint, %L::text)', :a, 'only-a'),
  'One queue: only its task is claimed.');
select results_eq($$select task_id from conductor.claim('w1', array['only-b', 'only-c', 'only-none'], 10) order by task_id$$,
  format('values (%s::bigint), (%s::bigint)', :b, :c),
  'Several queues: the tasks of those queues, none of the others.');
select is((select status::text from conductor.tasks where id = :d), 'queued',
  'The task of a queue not named stays queued.');
select ok((select bool_or(task_id = :d) from conductor.claim('w1', NULL, 1000)),
  'queues NULL claims from every queue.');

select * from finish();
rollback;
