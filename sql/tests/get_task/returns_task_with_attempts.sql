-- get_task returns one task with every attempt, oldest first.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('w-get', host => 'h', pid => 7) as r \gset
select conductor.enqueue('k', '{"p": 1}', 'get-q', max_attempts => 2, dedupe_key => 'g1') as t \gset
select conductor_tests.claim_one('get-q', 'w-get') as a1 \gset
select conductor.fail(:a1, 'first', retry_at => '2030-01-01 00:00:00+00', traceback => 'tb') as s \gset
set local conductor.fake_now = '2030-01-01 00:00:30+00';
select conductor_tests.claim_one('get-q', 'w-get') as a2 \gset
select conductor.complete(:a2, '{"ok": 1}') as d \gset

select is(
  (select to_jsonb(g) - array['attempts', 'forked_from', 'forked_at_step', 'code_version', 'graph_id'] from conductor.get_task(:t) g),
  (select to_jsonb(t) - array['backoff_base', 'backoff_factor', 'backoff_max', 'attempt_id', 'claimed_by', 'lease_expires_at',
                              'wait_for', 'wait_event', 'wait_until', 'wait_step', 'traceparent',
                              'concurrency_limit', 'expires_in', 'expires_at', 'rate_key', 'code_version', 'graph_id'] from conductor.tasks t where id = :t),
  'get_task returns the task''s columns as stored.');
select is((select jsonb_array_length(attempts) from conductor.get_task(:t)), 2, 'It holds both attempts.');
select is((select attempts->0 from conductor.get_task(:t)), conductor_tests.attempt(:a1) - array['task_id', 'timed_out'] || '{"number": 1}',
  'The first attempt comes first, number 1, with its worker, host, pid, times, outcome, error and traceback.');
select is((select array[attempts->1->>'id', attempts->1->>'outcome'] from conductor.get_task(:t)),
  array[:a2::text, 'succeeded'], 'The second attempt comes second.');
select is((select code_version from conductor.get_task(:t)), null, 'No code version recorded: NULL.');
select ok((select graph_id is null from conductor.get_task(:t)), 'Not a member of a graph: graph_id NULL.');
select throws_ok('select * from conductor.get_task(-1)', 'QC203', 'task -1 does not exist',
  'An unknown task raises QC203.');

select * from finish();
rollback;
