-- conductor.task_deadlines, what reap() reads, holds a row only for a task given a deadline
-- to start; reap() deletes a row once its time came and its task started, finished or
-- went, without ending that task, and follows a task whose deadline moved later.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'exp-rows') as plain \gset
select conductor.enqueue('k', '{}', 'exp-rows', expires_in => '1 minute') as started \gset
select conductor.enqueue('k', '{}', 'exp-rows-gone', expires_in => '1 minute') as gone \gset
select conductor.enqueue('k', '{}', 'exp-rows-moved', expires_in => '1 minute') as moved \gset
select is((select array_agg(task_id order by task_id) from conductor.task_deadlines where task_id >= :plain),
  array[:started, :gone, :moved]::bigint[], 'Only the tasks given a deadline have a row.');

select conductor_tests.claim_one('exp-rows', 'w1', '1 hour') as a_plain \gset
select conductor_tests.claim_one('exp-rows', 'w1', '1 hour') as a_started \gset
delete from conductor.tasks where id = :gone;
update conductor.tasks set expires_at = '2030-01-01 00:05:00+00' where id = :moved;  -- as a change of run_at would

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select is((select tasks_expired from conductor.reap_report()), 0, 'At the first deadline nothing expires ...');
select is((select status::text from conductor.tasks where id = :started), 'running', '... the started task runs on ...');
select results_eq(format('select task_id, expires_at from conductor.task_deadlines where task_id >= %s', :plain),
  format($$values (%s::bigint, '2030-01-01 00:05:00+00'::timestamptz)$$, :moved),
  '... and only the moved task''s row is left, at its new deadline.');

set local conductor.fake_now = '2030-01-01 00:05:00+00';
select is((select tasks_expired from conductor.reap_report()), 1, 'At its new deadline it expires.');
select is_empty(format('select * from conductor.task_deadlines where task_id >= %s', :plain),
  'No row is left.');

select * from finish();
rollback;
