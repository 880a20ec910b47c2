-- stats() counts the tasks that ended expired in the last 1, 5 and 15 minutes apart
-- from succeeded and failed, and gives each queue's cap (set_queue_limit), on the
-- fake clock (issue 30).
begin;
select plan(6);
\ir ../helpers.psql

set local conductor.fake_now = '2030-01-01 12:00:00+00';
select conductor.enqueue('k', '{}', 'st-exp', expires_in => '1 minute') as old \gset
set local conductor.fake_now = '2030-01-01 12:10:00+00';
select conductor.enqueue('k', '{}', 'st-exp', expires_in => '1 minute') as recent \gset
select conductor.enqueue('k', '{}', 'st-exp') as kept \gset
select conductor.set_queue_limit('st-exp', 7);
-- 12:00's task expires at the first reap after 12:01, 12:10's after 12:11
set local conductor.fake_now = '2030-01-01 12:05:00+00';
select tasks_expired as first_pass from conductor.reap_report() \gset
set local conductor.fake_now = '2030-01-01 12:15:00+00';
select tasks_expired as second_pass from conductor.reap_report() \gset

select is(:first_pass + :second_pass, 2, 'The reaper ended both tasks with a deadline expired.');
select is((select row(s.expired_1m, s.expired_5m, s.expired_15m)::text from conductor.stats() s
            where s.queue = 'st-exp'), '(1,1,2)',
  'expired_* count by finish time: one ended now (in every window), the other 10 minutes ago (15m only).');
set local conductor.fake_now = '2030-01-01 12:16:30+00';
select is((select row(s.expired_1m, s.expired_5m, s.expired_15m)::text from conductor.stats() s
            where s.queue = 'st-exp'), '(0,1,2)',
  'A minute and a half later the recent one has left the last minute.');
select is((select row(s.succeeded_15m, s.failed_15m, s.ready)::text from conductor.stats() s
            where s.queue = 'st-exp'), '(0,0,1)',
  'An expired task is neither succeeded nor failed; the task without a deadline is still ready.');
select is((select s.max_running from conductor.stats() s where s.queue = 'st-exp'), 7,
  'max_running is the queue''s cap.');
select is((select s.max_running from conductor.stats() s where s.queue = 'st-exp-none'), null::integer,
  'A queue without a cap has no max_running (and no row without tasks).');

select * from finish();
rollback;
