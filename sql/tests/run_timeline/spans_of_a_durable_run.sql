-- run_timeline of a durable run (a step, a child, a wait for the children, a wait for an
-- event, a durable sleep): one span per task, attempt, step and wait, in time order, each
-- wait with its kind, the queued time around them, and the resumes labelled as such.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.enqueue('order', '{}', 'tl-run') as run \gset

set local conductor.fake_now = '2030-01-01 00:00:01+00';
select conductor_tests.claim_one('tl-run') as a \gset
set local conductor.fake_now = '2030-01-01 00:00:02+00';
select conductor.save_step(:a, 'reserve', '{"shelf": "B-12"}');
set local conductor.fake_now = '2030-01-01 00:00:03+00';
select conductor.spawn(:a, 'child', 'pack', '{}', 'tl-child') as child \gset
set local conductor.fake_now = '2030-01-01 00:00:04+00';
select state from conductor.suspend(:a, 'children', 'children_all');

set local conductor.fake_now = '2030-01-01 00:00:05+00';
select conductor_tests.claim_one('tl-child') as c \gset
set local conductor.fake_now = '2030-01-01 00:00:06+00';
select conductor.complete(:c, '{}');  -- wakes the run

set local conductor.fake_now = '2030-01-01 00:00:07+00';
select conductor_tests.claim_one('tl-run') as a \gset
set local conductor.fake_now = '2030-01-01 00:00:08+00';
select state from conductor.suspend(:a, 'event:approved', 'event', 'tl-approved');
set local conductor.fake_now = '2030-01-01 00:00:10+00';
select conductor.emit_event('tl-approved', '{"by": "ann"}');

set local conductor.fake_now = '2030-01-01 00:00:11+00';
select conductor_tests.claim_one('tl-run') as a \gset
set local conductor.fake_now = '2030-01-01 00:00:12+00';
select state from conductor.suspend(:a, 'sleep', 'sleep', duration => '60 seconds');

select results_eq(
  format($$select span, what, label, started_at, finished_at from conductor.run_timeline(%s) where span = 'wait'$$, :run),
  $$values ('wait'::text, 'children'::text, 'children'::text, '2030-01-01 00:00:04+00'::timestamptz, '2030-01-01 00:00:06+00'::timestamptz),
           ('wait', 'event', 'event tl-approved', '2030-01-01 00:00:08+00', '2030-01-01 00:00:10+00'),
           ('wait', 'sleep', 'sleep until 2030-01-01T00:01:12.000Z', '2030-01-01 00:00:12+00', null)$$,
  'Each wait is a span of its kind, to its wake; the sleep still goes on.');

set local conductor.fake_now = '2030-01-01 00:01:20+00';
select conductor.reap();
set local conductor.fake_now = '2030-01-01 00:01:21+00';
select conductor_tests.claim_one('tl-run') as a \gset
select state from conductor.suspend(:a, 'sleep', 'sleep', duration => '60 seconds');  -- the replay: ready
set local conductor.fake_now = '2030-01-01 00:01:22+00';
select conductor.complete(:a, '{}');

select results_eq(
  format($$select span, what, label from conductor.run_timeline(%s) where task_id = %s and span = 'attempt'$$, :run, :run),
  $$values ('attempt'::text, 'suspended'::text, 'attempt 1'::text), ('attempt', 'suspended', 'attempt 1, resume 1'),
           ('attempt', 'suspended', 'attempt 1, resume 2'), ('attempt', 'succeeded', 'attempt 1, resume 3')$$,
  'The claims that resume a wait are resumes of the first attempt, not attempts of their own.');

select results_eq(
  format($$select span, task_id, what, label, started_at, finished_at from conductor.run_timeline(%s)$$, :run),
  format($$values
    ('task'::text, %1$s::bigint, 'succeeded'::text, 'order'::text, '2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:01:22+00'::timestamptz),
    ('queued', %1$s, 'queued', 'queued', '2030-01-01 00:00:00+00', '2030-01-01 00:00:01+00'),
    ('attempt', %1$s, 'suspended', 'attempt 1', '2030-01-01 00:00:01+00', '2030-01-01 00:00:04+00'),
    ('step', %1$s, 'step', 'reserve', '2030-01-01 00:00:01+00', '2030-01-01 00:00:02+00'),
    ('step', %1$s, 'spawn', 'child', '2030-01-01 00:00:02+00', '2030-01-01 00:00:03+00'),
    ('task', %2$s, 'succeeded', 'pack', '2030-01-01 00:00:03+00', '2030-01-01 00:00:06+00'),
    ('queued', %2$s, 'queued', 'queued', '2030-01-01 00:00:03+00', '2030-01-01 00:00:05+00'),
    ('wait', %1$s, 'children', 'children', '2030-01-01 00:00:04+00', '2030-01-01 00:00:06+00'),
    ('attempt', %2$s, 'succeeded', 'attempt 1', '2030-01-01 00:00:05+00', '2030-01-01 00:00:06+00'),
    ('queued', %1$s, 'queued', 'queued after the wake', '2030-01-01 00:00:06+00', '2030-01-01 00:00:07+00'),
    ('attempt', %1$s, 'suspended', 'attempt 1, resume 1', '2030-01-01 00:00:07+00', '2030-01-01 00:00:08+00'),
    ('wait', %1$s, 'event', 'event tl-approved', '2030-01-01 00:00:08+00', '2030-01-01 00:00:10+00'),
    ('queued', %1$s, 'queued', 'queued after the wake', '2030-01-01 00:00:10+00', '2030-01-01 00:00:11+00'),
    ('attempt', %1$s, 'suspended', 'attempt 1, resume 2', '2030-01-01 00:00:11+00', '2030-01-01 00:00:12+00'),
    ('wait', %1$s, 'sleep', 'sleep until 2030-01-01T00:01:12.000Z', '2030-01-01 00:00:12+00', '2030-01-01 00:01:12+00'),
    ('queued', %1$s, 'queued', 'queued after the wake', '2030-01-01 00:01:12+00', '2030-01-01 00:01:21+00'),
    ('attempt', %1$s, 'succeeded', 'attempt 1, resume 3', '2030-01-01 00:01:21+00', '2030-01-01 00:01:22+00')$$,
    :run, :child),
  'The finished run: every task, queued time, attempt, step and wait, in time order.');

select results_eq(
  format($$select distinct task_id from conductor.run_timeline(%s) order by 1$$, :child),
  format($$values (%s::bigint), (%s)$$, :run, :child),
  'A child''s id gives the timeline of its whole run.');

-- a failed attempt carries its error, and the retry's wait is queued time
select conductor.enqueue('flaky', '{}', 'tl-retry', max_attempts => 2) as flaky \gset
set local conductor.fake_now = '2030-01-01 00:02:00+00';
select conductor_tests.claim_one('tl-retry') as a \gset
select conductor.fail(:a, 'boom <b>', retry_at => '2030-01-01 00:02:30+00');
select results_eq(
  format($$select span, what, label, finished_at, error from conductor.run_timeline(%s) where span <> 'task'$$, :flaky),
  $$values ('queued'::text, 'queued'::text, 'queued'::text, '2030-01-01 00:02:00+00'::timestamptz, null::text),
           ('attempt', 'failed', 'attempt 1', '2030-01-01 00:02:00+00', 'boom <b>'),
           ('queued', 'queued', 'queued again', null, null)$$,
  'A failed attempt carries its error; the task is queued again until the retry claims it.');

select throws_ok('select * from conductor.run_timeline(-1)', 'QC203', NULL, 'No such task: QC203.');
select throws_ok(format('select * from conductor.run_timeline(%s, 0)', :run), 'QC106', NULL,
  'max_tasks under 1: QC106.');

select * from finish();
rollback;
