-- A handler publishes its state (set_run_state, as conductor_worker) at any point; a client
-- reads the latest (run_state, as conductor_client) while the run runs, while it waits for an
-- event (no worker holds it), and once it ended. Before any publish: one row of NULLs.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_rs_worker;
grant conductor_worker to t_rs_worker;
create role t_rs_client;
grant conductor_client to t_rs_client;

select conductor.enqueue('k', '{}', 'run-state') as t \gset
set local role t_rs_worker;
select attempt_id as a from conductor.claim('w1', array['run-state']) \gset
reset role;
set local role t_rs_client;
select results_eq(format('select state, set_at from conductor.run_state(task_id => %s)', :t),
  $$values (null::jsonb, null::timestamptz)$$, 'Before any publish the state is NULL.');
reset role;

set local role t_rs_worker;
select is(conductor.set_run_state(attempt_id => :a, state => '{"stage": "charging"}'), '2030-01-01 00:00:00+00'::timestamptz,
  'set_run_state returns the time it recorded.');
reset role;
set local conductor.fake_now = '2030-01-01 00:00:05+00';
set local role t_rs_worker;
select conductor.set_run_state(:a, '{"stage": "awaiting approval"}') as s \gset
select state from conductor.suspend(:a, 'approval', 'event', event => 'run-state-approve') \gset
reset role;

set local role t_rs_client;
select results_eq(format('select state, set_at from conductor.run_state(%s)', :t),
  $$values ('{"stage": "awaiting approval"}'::jsonb, '2030-01-01 00:00:05+00'::timestamptz)$$,
  'While the run waits, a client reads the state it published last.');
select is((select status::text from conductor.get_task(:t)), 'waiting', 'The run is waiting meanwhile.');
select throws_ok('select * from conductor.run_state(-1)', 'QC203', 'task -1 does not exist', 'An unknown task is QC203.');
select throws_ok(format($$select conductor.set_run_state(%s, '1')$$, :a), '42501', null,
  'A client cannot publish a run''s state.');
reset role;

select * from finish();
rollback;
