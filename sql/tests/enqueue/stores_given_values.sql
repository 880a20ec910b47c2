-- enqueue with every argument given stores each one as given.
begin;
select plan(2);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue(
  kind => 'resize_image', payload => '{"path": "/a.png", "sizes": [1, 2]}', queue => 'images.hi:eu/1-a',
  priority => -5, run_at => '2030-01-02 03:04:05+00', max_attempts => 7,
  dedupe_key => 'img-1', concurrency_key => 'bucket-a', max_recoveries => 0,
  backoff_base => '10 seconds', backoff_factor => 3, backoff_max => '5 minutes', timeout => '90 seconds',
  traceparent => '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', concurrency_limit => 4,
  expires_in => '10 minutes', rate_key => 'customer-7') as id \gset

select is(
  conductor_tests.task(:id) - array['id', 'root_id', 'enqueued_at'],
  jsonb_build_object(
    'queue', 'images.hi:eu/1-a', 'kind', 'resize_image',
    'payload', '{"path": "/a.png", "sizes": [1, 2]}'::jsonb, 'priority', -5,
    'run_at', '2030-01-02 03:04:05+00'::timestamptz, 'status', 'queued',
    'attempt', 0, 'max_attempts', 7, 'backoff_base', '00:00:10'::interval,
    'backoff_factor', 3, 'backoff_max', '00:05:00'::interval, 'recoveries', 0,
    'max_recoveries', 0, 'dedupe_key', 'img-1', 'concurrency_key', 'bucket-a',
    'parent_id', null, 'attempt_id', null, 'claimed_by', null, 'lease_expires_at', null,
    'wait_for', null, 'wait_event', null, 'wait_until', null, 'wait_step', null, 'result', null, 'error', null,
    'started_at', null, 'finished_at', null, 'timeout', '00:01:30'::interval,
    'traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'concurrency_limit', 4,
    'dedupe_states', null, 'dedupe_until', null, 'debounce_until', null,
    'expires_in', '00:10:00'::interval, 'expires_at', '2030-01-02 03:14:05+00'::timestamptz, 'rate_key', 'customer-7', 'code_version', null, 'graph_id', null),
  'Every argument of enqueue is stored in its column.');

select is((select enqueued_at from conductor.tasks where id = :id), '2030-01-01 00:00:00+00'::timestamptz,
  'enqueued_at is the clock''s time, whatever run_at says.');

select * from finish();
rollback;
