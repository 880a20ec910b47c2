-- enqueue(kind) alone: every default the contract names.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('send_email') as id \gset

select isnt(:id::bigint, null::bigint, 'enqueue returns the new task''s id.');

select is(
  conductor_tests.task(:id) - array['id'],
  jsonb_build_object(
    'queue', 'default', 'kind', 'send_email', 'payload', '{}'::jsonb, 'priority', 0,
    'run_at', '2030-01-01 00:00:00+00'::timestamptz, 'status', 'queued',
    'attempt', 0, 'max_attempts', 1, 'backoff_base', null, 'backoff_factor', null,
    'backoff_max', null, 'recoveries', 0, 'max_recoveries', 3,
    'dedupe_key', null, 'concurrency_key', null, 'parent_id', null, 'root_id', :id,
    'attempt_id', null, 'claimed_by', null, 'lease_expires_at', null,
    'wait_for', null, 'wait_event', null, 'wait_until', null, 'wait_step', null,
    'result', null, 'error', null, 'timeout', null, 'traceparent', null, 'concurrency_limit', null,
    'dedupe_states', null, 'dedupe_until', null, 'debounce_until', null,
    'expires_in', null, 'expires_at', null, 'rate_key', null, 'code_version', null, 'graph_id', null,
    'enqueued_at', '2030-01-01 00:00:00+00'::timestamptz, 'started_at', null, 'finished_at', null),
  'A task with only a kind is queued in ''default'' with an empty payload, priority 0, due now, '
  || 'one attempt, three recoveries, default backoff, no time limit, no expiry, and is its own root.');

select is((select count(*) from conductor.attempts where task_id = :id), 0::bigint,
  'Enqueueing records no attempt.');

select conductor.enqueue('send_email') as id2 \gset
select cmp_ok(:id2::bigint, '>', :id::bigint,
  'Each enqueue without a dedupe_key writes a new task with a higher id.');

select * from finish();
rollback;
