-- conductor._reap_waits(), reap's second step, on its own: it ends the waits past their
-- deadline and answers how many, and leaves an expired lease alone.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'waits-step-sleep') as t_sleep \gset
select conductor.enqueue('k', '{}', 'waits-step-lease') as t_lease \gset
select conductor_tests.claim_one('waits-step-sleep') as a_sleep \gset
select conductor_tests.claim_one('waits-step-lease', 'w1', '60 seconds') as a_lease \gset
select state from conductor.suspend(:a_sleep, 'nap', 'sleep', duration => '1 second') \gset

set local conductor.fake_now = '2030-01-01 01:00:00+00';
select is(conductor._reap_waits(), 1, 'It wakes the one sleep past its wake time and counts it.');
select is((select status::text from conductor.tasks where id = :t_sleep), 'queued', 'The sleeper is queued again.');
select is((select (status, attempt_id)::text from conductor.tasks where id = :t_lease),
  format('(running,%s)', :a_lease),
  'An expired lease is not its business: the task still runs under its attempt.');

select * from finish();
rollback;
