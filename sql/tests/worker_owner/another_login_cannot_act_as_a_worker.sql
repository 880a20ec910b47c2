-- A worker id is the login's that registered it. Another worker login may not heartbeat
-- it (a dead worker's leases would never be reaped), mark it asleep or awake, or complete,
-- complete_many or release its attempts (attempt ids are readable by every role): QC208,
-- nothing changes. The worker's own login and an admin may.
begin;
select plan(12);
\ir ../helpers.psql

create role t_billing;
grant conductor_worker to t_billing;
create role t_other;
grant conductor_worker to t_other;
create role t_admin;
grant conductor_admin to t_admin;

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.enqueue(kind => 'k', queue => 'wo') as t1 \gset
select conductor.enqueue(kind => 'k', queue => 'wo') as t2 \gset
set local role t_billing;
select conductor.register_worker(worker_id => 'billing-w');
select array_agg(attempt_id order by task_id) as attempts from conductor.claim('billing-w', array['wo'], 2, interval '1 minute') \gset
reset role;
select (:'attempts'::bigint[])[1] as a1, (:'attempts'::bigint[])[2] as a2 \gset
select lease_expires_at as lease1 from conductor.tasks where id = :t1 \gset
set local conductor.fake_now = '2030-01-01 00:00:30+00';

set local role t_other;
select throws_ok(format('select * from conductor.heartbeat(worker_id => %L, attempt_ids => array[%s, %s]::bigint[])', 'billing-w', :a1, :a2),
  'QC208', null, 'Another login cannot heartbeat the billing worker.');
select throws_ok($$select conductor.sleep(worker_id => 'billing-w')$$, 'QC208', null,
  'Nor mark it asleep.');
select throws_ok($$select conductor.wake(worker_id => 'billing-w')$$, 'QC208', null,
  'Nor wake it.');
select throws_ok(format('select conductor.complete(attempt_id => %s, result => %L)', :a1, '{"forged": true}'), 'QC208', null,
  'Nor complete its attempt.');
select throws_ok(format('select * from conductor.complete_many(attempt_ids => array[%s]::bigint[])', :a2), 'QC208', null,
  'Nor complete it in a batch.');
select throws_ok(format('select conductor.release(attempt_id => %s)', :a2), 'QC208', null,
  'Nor release it.');
reset role;
select is((select array_agg(status::text order by id) from conductor.tasks where id in (:t1, :t2)), '{running,running}',
  'Both tasks still run.');
select is((select lease_expires_at from conductor.tasks where id = :t1), :'lease1'::timestamptz,
  'The lease was not extended.');

set local role t_billing;
select is((select count(*) from conductor.heartbeat(worker_id => 'billing-w', attempt_ids => array[:a1, :a2]::bigint[])),
  0::bigint, 'The billing worker''s own login heartbeats it.');
select lives_ok(format('select conductor.complete(attempt_id => %s, result => %L)', :a1, '{}'),
  'And completes its attempt.');
reset role;
set local role t_admin;
select lives_ok(format('select conductor.release(attempt_id => %s)', :a2), 'An admin may release any attempt.');
select lives_ok($$select conductor.wake(worker_id => 'billing-w')$$, 'And wake any worker.');
reset role;

select * from finish();
rollback;
