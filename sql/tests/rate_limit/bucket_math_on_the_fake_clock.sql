-- At most per_second starts per second, in bursts of at most burst: a queue limited to 10/s
-- with a burst of 10 starts 10 tasks at t and none more at t, 5 at t + 0.5 s, then none,
-- a whole token only (none at t + 0.55 s, one at t + 0.6 s), and after a long idle time
-- no more than the burst. The tasks kept are the first in claim order; the others stay
-- queued and untouched, with no attempt.
begin;
select plan(13);
\ir ../helpers.psql
set local conductor.fake_now = '2032-01-01 00:00:00+00';

select count(*) from (select conductor.enqueue('k', jsonb_build_object('n', n), 'rl-math') from generate_series(1, 40) n) e \gset
select conductor.set_rate_limit(queue => 'rl-math', per_second => 10, burst => 10) as s \gset
create temp table before as
select id, conductor_tests.task(id) as row from conductor.tasks where queue = 'rl-math';

create temp table got as
select task_id from conductor.claim('w1', array['rl-math'], 50);
select is((select count(*) from got), 10::bigint, 'At t, a claim of 50 starts 10: the burst.');
select results_eq($$select task_id from got order by task_id$$,
  $$select id from conductor.tasks where queue = 'rl-math' order by id limit 10$$,
  'The ten kept are the first ten in claim order.');
select results_eq($$select b.row from before b where b.id not in (select task_id from got) order by b.id$$,
  $$select conductor_tests.task(b.id) from before b where b.id not in (select task_id from got) order by b.id$$,
  'The 30 picked beyond the tokens, or not picked, are untouched.');
select is((select count(*) from conductor.attempts a join before b on b.id = a.task_id), 10::bigint,
  'Only the ten started have an attempt.');
select results_eq($$select tokens, refilled_at from conductor.rate_limits where scope = 'queue' and name = 'rl-math'$$,
  $$values (0::double precision, '2032-01-01 00:00:00+00'::timestamptz)$$,
  'The bucket is empty, refilled at t.');
select is((select count(*) from conductor.claim('w2', array['rl-math'], 50)), 0::bigint,
  'Another claim at t, by another worker, starts nothing.');

set local conductor.fake_now = '2032-01-01 00:00:00.5+00';
select is((select count(*) from conductor.claim('w1', array['rl-none', 'rl-math'], 50)), 5::bigint,
  'At t + 0.5 s, 5 (a claim of several queues obeys the queue''s limit too).');
select is((select count(*) from conductor.claim('w1', array['rl-math'], 50)), 0::bigint, 'Then none.');
set local conductor.fake_now = '2032-01-01 00:00:00.55+00';
select is((select count(*) from conductor.claim('w1', array['rl-math'], 50)), 0::bigint,
  'At t + 0.55 s, half a token: none.');
set local conductor.fake_now = '2032-01-01 00:00:00.6+00';
select is((select count(*) from conductor.claim('w1', array['rl-math'], 50)), 1::bigint,
  'At t + 0.6 s, one.');

set local conductor.fake_now = '2032-01-01 01:00:00+00';
select is((select count(*) from conductor.claim('w1', array['rl-math'], 50)), 10::bigint,
  'An hour later, no more than the burst: 10.');
select is((select count(*) from conductor.tasks where queue = 'rl-math' and status = 'running'), 26::bigint,
  '26 started in all: 10 + 5 + 1 + 10.');
select is((select count(*) from conductor.tasks where queue = 'rl-math' and status = 'queued' and attempt = 0), 14::bigint,
  'The other 14 are queued, never attempted.');

select * from finish();
rollback;
