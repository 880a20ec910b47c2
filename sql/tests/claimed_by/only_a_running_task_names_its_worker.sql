-- A task that no worker holds names none: every path that puts a task back in its queue
-- (release, a retry after fail, the reaper's return of a lost lease or of a timed-out
-- attempt, the end of a wait, retry) or parks it (suspend) clears claimed_by; the attempt
-- rows keep who ran each attempt. A task that ends keeps the last worker that ran it.
begin;
select plan(14);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

-- release
select conductor.enqueue('k', '{}', 'cb-release') as t \gset
select conductor_tests.claim_one('cb-release', 'w-stopping') as a \gset
select is((select claimed_by from conductor.tasks where id = :t), 'w-stopping', 'A running task names the worker holding it.');
select conductor.release(:a);
select is((select (status, claimed_by)::text from conductor.tasks where id = :t), '(queued,)',
  'A released task is queued and names no worker.');
select is((select worker_id from conductor.attempts where id = :a), 'w-stopping',
  'Its released attempt still names the worker that ran it.');

-- fail with attempts left, then fail for good
select conductor.enqueue('k', '{}', 'cb-fail', max_attempts => 2) as t \gset
select conductor_tests.claim_one('cb-fail', 'w-first') as a \gset
select conductor.fail(:a, 'boom');
select is((select (status, claimed_by)::text from conductor.tasks where id = :t), '(queued,)',
  'A task queued again after a failure names no worker.');
set local conductor.fake_now = '2030-01-02 00:00:00+00';
select conductor_tests.claim_one('cb-fail', 'w-second') as a \gset
select conductor.fail(:a, 'boom again');
select is((select (status, claimed_by)::text from conductor.tasks where id = :t), '(failed,w-second)',
  'A task that failed for good keeps the last worker that ran it.');
select is((select array_agg(worker_id order by id) from conductor.attempts where task_id = :t),
  array['w-first', 'w-second'], 'Each attempt row names its own worker.');

-- the reaper: a lost lease back in the queue, a lost lease that is final, a timed-out attempt retried
select conductor.enqueue('k', '{}', 'cb-lost') as t \gset
select conductor_tests.claim_one('cb-lost', 'w-crashed', '10 seconds') as a \gset
set local conductor.fake_now = '2030-01-02 00:01:00+00';
select cmp_ok(conductor.reap(), '>=', 1, 'The reaper takes the lost lease back.');
select is((select (status, recoveries, claimed_by)::text from conductor.tasks where id = :t), '(queued,1,)',
  'A task the reaper put back in its queue names no worker.');
select is((select (outcome, worker_id)::text from conductor.attempts where id = :a), '(lost,w-crashed)',
  'Its lost attempt still names the worker that was lost.');

select conductor.enqueue('k', '{}', 'cb-dead', max_recoveries => 1) as t \gset
select conductor_tests.claim_one('cb-dead', 'w-crashed-again', '10 seconds') as a \gset
set local conductor.fake_now = '2030-01-02 00:02:00+00';
select conductor.reap();
select is((select (status, claimed_by)::text from conductor.tasks where id = :t), '(dead,w-crashed-again)',
  'A task the reaper marks dead keeps the last worker that ran it.');

select conductor.enqueue('k', '{}', 'cb-timeout', max_attempts => 2, timeout => '5 seconds') as t \gset
select conductor_tests.claim_one('cb-timeout', 'w-slow', '1 second') as a \gset
set local conductor.fake_now = '2030-01-02 00:03:00+00';
select conductor.reap();
select is((select (status, claimed_by)::text from conductor.tasks where id = :t), '(queued,)',
  'A timed-out attempt retried by the reaper leaves its task naming no worker.');

-- suspend and wake
select conductor.enqueue('k', '{}', 'cb-wait') as t \gset
select conductor_tests.claim_one('cb-wait', 'w-suspending') as a \gset
select state from conductor.suspend(:a, 'approval', 'event', 'cb-approved');
select is((select (status, claimed_by)::text from conductor.tasks where id = :t), '(waiting,)',
  'A waiting task names no worker.');
select conductor.emit_event('cb-approved');
select is((select (status, claimed_by)::text from conductor.tasks where id = :t), '(queued,)',
  'A woken task back in its queue names no worker.');

-- retry of a finished task
select conductor.enqueue('k', '{}', 'cb-retry') as t \gset
select conductor_tests.claim_one('cb-retry', 'w-failing') as a \gset
select conductor.fail(:a, 'boom');
select conductor.retry(:t);
select is((select (status, claimed_by)::text from conductor.tasks where id = :t), '(queued,)',
  'A retried task names no worker.');

select * from finish();
rollback;
