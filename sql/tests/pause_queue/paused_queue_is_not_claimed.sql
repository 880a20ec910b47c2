-- A paused queue is not claimed: a claim of it alone returns nothing, a claim of several
-- queues or of every queue takes only the others' tasks (keyed ones too), and its tasks
-- stay queued and untouched, no attempt written. resume_queue makes them claimable again.
begin;
select plan(14);
\ir ../helpers.psql
set local conductor.fake_now = '2031-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'pq-paused') as p1 \gset
select conductor.enqueue('k', '{}', 'pq-paused', priority => 5) as p2 \gset
select conductor.enqueue('k', '{}', 'pq-paused', concurrency_key => 'pq-key') as pk \gset
select conductor.enqueue('k', '{}', 'pq-open') as o1 \gset
select conductor.enqueue('k', '{}', 'pq-open', concurrency_key => 'pq-key-2') as ok2 \gset
create temp table before as
select id, conductor_tests.task(id) as row from conductor.tasks where queue = 'pq-paused';

select is(conductor.pause_queue('pq-paused'), true, 'pause_queue answers true for a running queue.');
select is(conductor.pause_queue('pq-paused'), false, 'A second pause_queue answers false: it was paused already.');
select is((select count(*) from conductor.paused_queues where queue = 'pq-paused'), 1::bigint,
  'The queue has one paused_queues row.');

select is_empty($$select * from conductor.claim('w1', array['pq-paused'], 10)$$,
  'A claim of the paused queue alone returns nothing.');
select is_empty($$select * from conductor.claim('w1', array['pq-paused'], 10, kinds => array['k'])$$,
  'With kinds too.');
select results_eq($$select task_id from conductor.claim('w1', array['pq-paused', 'pq-open'], 1) order by task_id$$,
  format('values (%s::bigint)', :o1),
  'A claim of several queues takes from the others only (the paused one''s priority 5 task is passed over).');
select results_eq($$select task_id from conductor.claim('w1', null, 1000000) where queue like 'pq-%' order by task_id$$,
  format('values (%s::bigint)', :ok2),
  'A claim of every queue leaves the paused queue out, keyed tasks too (the key probe filters it).');

select results_eq($$select b.row from before b order by b.id$$,
  $$select conductor_tests.task(b.id) from before b order by b.id$$,
  'The paused queue''s tasks are untouched: every column as before.');
select is((select count(*) from conductor.attempts a join before b on b.id = a.task_id), 0::bigint,
  'No attempt was written for them.');

select is(conductor.resume_queue('pq-paused'), true, 'resume_queue answers true for a paused queue.');
select is(conductor.resume_queue('pq-paused'), false, 'A second resume_queue answers false: it was not paused.');
select is((select count(*) from conductor.paused_queues where queue = 'pq-paused'), 0::bigint,
  'Its paused_queues row is gone.');
select results_eq($$select task_id from conductor.claim('w1', array['pq-paused'], 10)$$,
  format('values (%s::bigint), (%s::bigint), (%s::bigint)', :p2, :p1, :pk),
  'Resumed, its tasks are claimed in claim order.');
select is(conductor.pause_queue('pq-empty'), true, 'A queue without tasks can be paused (and is then known paused).');

select * from finish();
rollback;
