-- heartbeat answers 'timed_out' for an attempt past its deadline that failed as timed out
-- (attempts.timed_out, written by fail(timed_out => true) or reap()), not for one whose
-- error merely reads the same: the fact is recorded, the text is compared by nobody.
begin;
select plan(1);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'hb-fact', timeout => '30 days') as t_fact \gset
select conductor.enqueue('k', '{}', 'hb-text', timeout => '30 days') as t_text \gset
select conductor_tests.claim_one('hb-fact', 'w1') as a_fact \gset
select conductor_tests.claim_one('hb-text', 'w1') as a_text \gset

set local conductor.fake_now = '2030-01-31 00:00:00+00';
select conductor.fail(attempt_id => :a_fact, timed_out => true) as s1 \gset
select conductor.fail(attempt_id => :a_text, error => 'timed out after 2.592e+06 s') as s2 \gset
select set_eq(format($$select attempt_id, task_id, state from conductor.heartbeat('w1', array[%s, %s]::bigint[])$$,
                     :a_fact, :a_text),
  format($$values (%s::bigint, %s::bigint, 'timed_out'::text), (%s, %s, 'finished')$$,
         :a_fact, :t_fact, :a_text, :t_text),
  'The attempt failed as timed out is answered timed_out; the one failed with the same words is finished.');

select * from finish();
rollback;
