-- claim leases the task and records an attempt row: the fencing token, with the worker's host and pid.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('w-registered', host => 'host-1', pid => 4242) as reg \gset
select conductor.enqueue('resize', '{"p": 1}', 'attempt-q', priority => 3, max_attempts => 2) as id \gset

create temp table claimed as
select * from conductor.claim('w-registered', array['attempt-q'], 1, '5 minutes');

select is(
  (select to_jsonb(c) - 'attempt_id' from claimed c),
  jsonb_build_object('task_id', :id, 'kind', 'resize', 'queue', 'attempt-q', 'payload', '{"p": 1}'::jsonb,
    'priority', 3, 'attempt', 1, 'max_attempts', 2, 'recoveries', 0, 'parent_id', null, 'root_id', :id,
    'run_at', '2030-01-01 00:00:00+00'::timestamptz, 'enqueued_at', '2030-01-01 00:00:00+00'::timestamptz,
    'lease_expires_at', '2030-01-01 00:05:00+00'::timestamptz, 'steps', '{}'::jsonb, 'timeout', null,
    'traceparent', null, 'code_version', null, 'step_order', null),
  'claim returns what a handler needs: the task, its counts, the lease end (now + lease), its steps (none yet) and time limit (none).');

select attempt_id from claimed \gset
select is(
  conductor_tests.task(:id) - array['id', 'payload', 'root_id', 'parent_id', 'enqueued_at', 'run_at', 'kind', 'queue',
                                    'backoff_base', 'backoff_factor', 'backoff_max', 'dedupe_key', 'concurrency_key',
                                    'wait_for', 'wait_event', 'wait_until', 'wait_step', 'priority', 'max_recoveries',
                                    'concurrency_limit', 'dedupe_states', 'dedupe_until', 'debounce_until'],
  jsonb_build_object('status', 'running', 'attempt', 1, 'max_attempts', 2, 'recoveries', 0,
    'attempt_id', :attempt_id, 'claimed_by', 'w-registered',
    'lease_expires_at', '2030-01-01 00:05:00+00'::timestamptz,
    'started_at', '2030-01-01 00:00:00+00'::timestamptz, 'finished_at', null, 'result', null, 'error', null,
    'timeout', null, 'traceparent', null, 'expires_in', null, 'expires_at', null, 'rate_key', null, 'code_version', null, 'graph_id', null),
  'The task is running, attempt 1, held by the worker under the returned attempt_id until the lease ends.');
select is(
  conductor_tests.attempt(:attempt_id),
  jsonb_build_object('id', :attempt_id, 'task_id', :id, 'attempt', 1, 'worker_id', 'w-registered',
    'host', 'host-1', 'pid', 4242, 'claimed_at', '2030-01-01 00:00:00+00'::timestamptz,
    'finished_at', null, 'outcome', null, 'error', null, 'traceback', null, 'timed_out', false),
  'The attempt row records the registered worker''s host and pid and is open (no outcome).');

select conductor.enqueue('resize', '{}', 'attempt-q') as id2 \gset
select attempt_id as attempt2 from conductor.claim('w-anonymous', array['attempt-q']) \gset
select is(
  (select (worker_id, host, pid, attempt)::text from conductor.attempts where id = :attempt2),
  '(w-anonymous,,,1)',
  'A worker that never registered can claim; its attempt has no host or pid.');
select is((select lease_expires_at from conductor.tasks where id = :id2), '2030-01-01 00:01:00+00'::timestamptz,
  'The default lease is 60 seconds.');

select conductor.release(:attempt2) as r \gset
select attempt_id as attempt3 from conductor.claim('w-anonymous', array['attempt-q']) \gset
select cmp_ok(:attempt3::bigint, '<>', :attempt2::bigint, 'Every claim gets a new attempt_id.');
select is((select count(*) from conductor.attempts where task_id = :id2), 2::bigint,
  'Every claim records its own attempt row.');

select * from finish();
rollback;
