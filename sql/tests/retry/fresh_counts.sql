-- retry puts a failed, dead or cancelled task back in its queue, due now, with fresh counts.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{"keep": 1}', 'retry-fail', max_attempts => 2, run_at => '2030-01-01 00:00:00+00') as t \gset
select conductor_tests.claim_one('retry-fail') as a1 \gset
select conductor.fail(:a1, 'one', retry_at => '2030-01-01 00:00:00+00') as s1 \gset
select conductor_tests.claim_one('retry-fail', 'w1', '1 second') as a2 \gset
set local conductor.fake_now = '2030-01-01 00:00:10+00';
select conductor.reap() as r \gset
select conductor_tests.claim_one('retry-fail') as a3 \gset
select conductor.fail(:a3, 'two') as s3 \gset
select is((select (status, attempt, recoveries)::text from conductor.tasks where id = :t), '(failed,2,1)',
  'Setup: the task failed after two attempts and one recovery.');

set local conductor.fake_now = '2030-01-02 00:00:00+00';
select is(conductor.retry(:t), :t::bigint, 'retry returns the task''s id.');
select is(
  (select jsonb_build_object('status', status, 'attempt', attempt, 'recoveries', recoveries, 'run_at', run_at,
     'error', error, 'result', result, 'finished_at', finished_at, 'lease_expires_at', lease_expires_at, 'payload', payload)
     from conductor.tasks where id = :t),
  jsonb_build_object('status', 'queued', 'attempt', 0, 'recoveries', 0, 'run_at', '2030-01-02 00:00:00+00'::timestamptz,
     'error', null, 'result', null, 'finished_at', null, 'lease_expires_at', null, 'payload', '{"keep": 1}'::jsonb),
  'The task is queued, due now, attempt and recoveries 0, error and result cleared, payload kept.');
select is((select count(*) from conductor.attempts where task_id = :t), 3::bigint, 'Its attempts stay for forensics.');

select conductor.enqueue('k', '{}', 'retry-cancel') as c \gset
select conductor.cancel(:c) as n \gset
select is(conductor.retry(:c), :c::bigint, 'A cancelled task can be retried by hand.');

select conductor.enqueue('k', '{}', 'retry-dead', max_recoveries => 0) as d \gset
select conductor_tests.claim_one('retry-dead', 'w1', '1 second') as ad \gset
set local conductor.fake_now = '2030-01-02 00:00:10+00';
select conductor.reap() as r2 \gset
select conductor.retry(:d) as rd \gset
select is((select (status, recoveries, error)::text from conductor.tasks where id = :d), '(queued,0,)',
  'A dead task is queued again with recoveries 0 and no error.');

select * from finish();
rollback;
