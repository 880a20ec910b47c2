-- fail(timed_out => true): the worker gives the reason, the engine writes the error. The
-- attempt and the task get 'timed out after N s' (N as %g prints the limit: 30 days is
-- 2.592e+06), whatever error the worker sent (or none), and the attempt is recorded as
-- timed out; a worker's failure whose text merely reads the same is not. Reported as
-- conductor_worker, by the names a v0.2.0 caller uses plus timed_out.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'fail-to', timeout => '30 days') as t \gset
select conductor.enqueue('k', '{}', 'fail-to-text', timeout => '30 days') as t_text \gset
select conductor.enqueue('k', '{}', 'fail-to-none') as t_none \gset
select conductor_tests.claim_one('fail-to', 'w1') as a \gset
select conductor_tests.claim_one('fail-to-text', 'w1') as a_text \gset
select conductor_tests.claim_one('fail-to-none', 'w1') as a_none \gset

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;
select conductor.fail(attempt_id => :a, error => null, timed_out => true) as s1 \gset
select conductor.fail(attempt_id => :a_text, error => 'timed out after 2.592e+06 s') as s2 \gset
select conductor.fail(attempt_id => :a_none, error => 'my own words', timed_out => true) as s3 \gset
reset role;

select is((select (t.status, t.error)::text from conductor.tasks t where t.id = :t),
  '(failed,"timed out after 2.592e+06 s")',
  'The task failed with the engine''s text for its 30-day limit; the worker sent none.');
select is((select (a.outcome, a.error, a.timed_out)::text from conductor.attempts a where a.id = :a),
  '(failed,"timed out after 2.592e+06 s",t)',
  'The attempt holds the same text and is recorded as timed out.');
select is((select a.timed_out from conductor.attempts a where a.id = :a_text), false,
  'A failure whose error only reads like the time limit''s is not recorded as timed out.');
select is((select a.error from conductor.attempts a where a.id = :a_none), 'timed out',
  'A task without a timeout reported timed out reads ''timed out'': the worker''s words are not kept.');
select is(conductor._timed_out_error('2592000 seconds'), 'timed out after 2.592e+06 s',
  'The one writer of the text prints 30 days as %g does.');

select * from finish();
rollback;
