-- The limits hold on every pick: keyed tasks (the key probe's pick) draw tokens like the
-- others, and a task not yet due neither draws one nor is claimed. A paused queue with a
-- limit is not claimed and draws nothing.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2032-06-01 00:00:00+00';

select conductor.set_rate_limit(queue => 'rl-keyed', per_second => 1, burst => 2) as s \gset
select conductor.enqueue('k', '{}', 'rl-keyed', run_at => '2032-06-01 00:00:00+00', concurrency_key => 'rk-1') as k1 \gset
select conductor.enqueue('k', '{}', 'rl-keyed', run_at => '2032-06-01 00:00:00+00', concurrency_key => 'rk-2') as k2 \gset
select conductor.enqueue('k', '{}', 'rl-keyed', run_at => '2032-06-01 00:00:00+00', concurrency_key => 'rk-3') as k3 \gset
select conductor.enqueue('k', '{}', 'rl-keyed', run_at => '2032-06-01 00:00:30+00') as later \gset

select results_eq($$select task_id from conductor.claim('w1', array['rl-keyed'], 10) order by task_id$$,
  format('values (%s::bigint), (%s::bigint)', :k1, :k2),
  'Keyed tasks draw tokens too: two of three start.');
select is((select status::text from conductor.tasks where id = :k3), 'queued', 'The third keyed task stays queued.');

set local conductor.fake_now = '2032-06-01 00:00:10+00';
select conductor.pause_queue('rl-keyed') as p \gset
select is_empty($$select * from conductor.claim('w1', array['rl-keyed'], 10)$$, 'Paused, it is not claimed.');
select is((select tokens from conductor.rate_limits where name = 'rl-keyed'), 0::double precision,
  'And its bucket is not drawn from (nor written: refilled lazily).');
select conductor.resume_queue('rl-keyed') as r \gset
select results_eq($$select task_id from conductor.claim('w1', array['rl-keyed'], 10)$$,
  format('values (%s::bigint)', :k3),
  'Resumed, the keyed task starts; the one due later waits for its time, not for a token.');

select * from finish();
rollback;
