-- list_attempts numbers a task's attempts 1..n in claim order, whatever became of each
-- (issue 27): a durable run resumed twice reads #1 suspended, #2 suspended, #3 succeeded,
-- where attempts.attempt (the retry budget at each claim) reads 1 three times; a lost
-- attempt and the one after it read #1 lost, #2 succeeded, not #1 twice. get_task's
-- attempts carry the same numbers.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

-- a durable run that waits twice for an event, then finishes
select conductor.enqueue('k', '{}', 'la-run') as run \gset
select conductor_tests.claim_one('la-run') as a \gset
select state from conductor.suspend(:a, 'first', 'event', 'la-first');
select conductor.emit_event('la-first');
select conductor_tests.claim_one('la-run') as a \gset
select state from conductor.suspend(:a, 'second', 'event', 'la-second');
select conductor.emit_event('la-second');
select conductor_tests.claim_one('la-run') as a \gset
select conductor.complete(:a, '{}');

select results_eq(format($$select number, outcome, attempt from conductor.list_attempts(array[%s]::bigint[])$$, :run),
  $$values (1, 'suspended'::text, 1), (2, 'suspended', 1), (3, 'succeeded', 1)$$,
  'A run resumed twice has attempts #1, #2 and #3, though each claim''s budget counter read 1.');

-- a lost attempt, then the one that finished
select conductor.enqueue('k', '{}', 'la-lost') as lost \gset
select conductor_tests.claim_one('la-lost', 'w-crashed', '10 seconds') as a \gset
set local conductor.fake_now = '2030-01-01 00:01:00+00';
select conductor.reap();
select conductor_tests.claim_one('la-lost', 'w-rescuer') as a \gset
select conductor.complete(:a, '{}');
select results_eq(format($$select number, outcome, worker_id from conductor.list_attempts(array[%s]::bigint[])$$, :lost),
  $$values (1, 'lost'::text, 'w-crashed'), (2, 'succeeded', 'w-rescuer')$$,
  'A lost attempt and the next read #1 lost and #2 succeeded.');

-- several tasks at once: each is numbered on its own, by task then claim order
select results_eq(
  format($$select task_id, number from conductor.list_attempts(array[%s, %s]::bigint[])$$, :lost, :run),
  format($$values (%s::bigint, 1), (%s, 2), (%s, 3), (%s, 1), (%s, 2)$$, :run, :run, :run, :lost, :lost),
  'Each task''s attempts are numbered on their own, the tasks in id order.');
select is((select count(*) from conductor.list_attempts(array[]::bigint[])), 0::bigint, 'No task ids: no rows.');

-- get_task: the same numbers, and the budget apart
select is((select jsonb_path_query_array(attempts, '$[*].number') from conductor.get_task(:run)),
  '[1, 2, 3]'::jsonb, 'get_task''s attempts carry the same numbers, oldest first.');
select is((select (attempt, max_attempts)::text from conductor.get_task(:run)), '(1,1)',
  'The retry budget is the task''s: one try used of one (the waits used none).');

select * from finish();
rollback;
