-- heartbeat extends a lease to now + lease, but never past the attempt's deadline
-- (claimed_at + the task's timeout); a task without a timeout is extended as before.
-- Beats as conductor_worker, the role heartbeat is granted to.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'hb-cap', timeout => '90 seconds') as t \gset
select conductor.enqueue('k', '{}', 'hb-cap-free') as free \gset
select conductor_tests.claim_one('hb-cap', 'w1', '60 seconds') as a \gset
select conductor_tests.claim_one('hb-cap-free', 'w1', '60 seconds') as a_free \gset

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

set local conductor.fake_now = '2030-01-01 00:00:20+00';
select is_empty(format($$select * from conductor.heartbeat('w1', array[%s, %s]::bigint[], '60 seconds')$$, :a, :a_free),
  'A beat well before the deadline answers nothing: both leases were extended.');
select is((select lease_expires_at from conductor.tasks where id = :t), '2030-01-01 00:01:20+00'::timestamptz,
  'Before the deadline is near, the lease is now + lease.');

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select is_empty(format($$select * from conductor.heartbeat('w1', array[%s, %s]::bigint[], '60 seconds')$$, :a, :a_free),
  'A beat whose lease would pass the deadline answers nothing either: the lease was extended to the deadline.');
select is((select lease_expires_at from conductor.tasks where id = :t), '2030-01-01 00:01:30+00'::timestamptz,
  'The lease ends at the deadline, claimed_at + timeout (90 s), not at now + lease.');
select is((select lease_expires_at from conductor.tasks where id = :free), '2030-01-01 00:02:00+00'::timestamptz,
  'A task without a timeout is extended to now + lease.');
reset role;

select * from finish();
rollback;
