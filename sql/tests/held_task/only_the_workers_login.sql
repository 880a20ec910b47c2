-- Attempt ids are readable by every role, so the fence of fail, save_step, spawn and
-- suspend (conductor._held_task) also asks who calls: only the login that registered the
-- attempt's worker, or an admin, may act on it; another worker login gets QC208 and
-- nothing changes.
begin;
select plan(8);
\ir ../helpers.psql

create role t_billing;
grant conductor_worker to t_billing;
create role t_other;
grant conductor_worker to t_other;

select conductor.enqueue(kind => 'k', queue => 'ht') as task \gset
set local role t_billing;
select conductor.register_worker(worker_id => 'billing-w');
select attempt_id as attempt from conductor.claim('billing-w', array['ht'], 1, interval '1 minute') \gset
reset role;
select conductor_tests.task(:task) as before \gset

set local role t_other;
select throws_ok(format('select conductor.fail(attempt_id => %s, error => %L)', :attempt, 'forged'),
  'QC208', null, 'Another worker login cannot fail the billing worker''s attempt.');
select throws_ok(format('select conductor.save_step(attempt_id => %s, name => %L, result => %L)', :attempt, 's', '{}'),
  'QC208', null, 'Nor checkpoint a step into it.');
select throws_ok(format('select conductor.spawn(attempt_id => %s, step => %L, kind => %L)', :attempt, 'c', 'k'),
  'QC208', null, 'Nor spawn a child from it.');
select throws_ok(format('select * from conductor.suspend(attempt_id => %s, step => %L, wait_for => %L, duration => %L)',
                        :attempt, 'nap', 'sleep', '1 hour'),
  'QC208', null, 'Nor suspend it.');
reset role;
select is(conductor_tests.task(:task), :'before'::jsonb, 'The task is as it was.');
select is((select count(*) from conductor.steps where task_id = :task), 0::bigint, 'No step was saved.');

set local role t_billing;
select lives_ok(format('select conductor.save_step(attempt_id => %s, name => %L, result => %L)', :attempt, 's', '{}'),
  'The billing worker''s own login checkpoints its step.');
reset role;
create role t_admin;
grant conductor_admin to t_admin;
set local role t_admin;
select is(conductor.fail(attempt_id => :attempt, error => 'ops')::text, 'failed', 'An admin may fail any attempt.');
reset role;

select * from finish();
rollback;
