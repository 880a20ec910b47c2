-- heartbeat extends the lease of every attempt that still holds its task to now + lease.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('w1') as reg \gset
select conductor.enqueue('k', '{}', 'hb-q') as t1 \gset
select conductor.enqueue('k', '{}', 'hb-q') as t2 \gset
select conductor_tests.claim_one('hb-q') as a1 \gset
select conductor_tests.claim_one('hb-q') as a2 \gset

set local conductor.fake_now = '2030-01-01 00:00:45+00';
select is_empty(format($$select * from conductor.heartbeat('w1', array[%s, %s]::bigint[], '2 minutes')$$, :a1, :a2),
  'Heartbeating attempts that hold their tasks answers nothing.');
select results_eq(format('select lease_expires_at from conductor.tasks where id in (%s, %s)', :t1, :t2),
  $$values ('2030-01-01 00:02:45+00'::timestamptz), ('2030-01-01 00:02:45+00'::timestamptz)$$,
  'Both leases now end at the heartbeat''s time plus the lease given.');
select is((select last_seen_at from conductor.workers where id = 'w1'), '2030-01-01 00:00:45+00'::timestamptz,
  'The worker is marked seen at the heartbeat''s time.');

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select is_empty(format($$select * from conductor.heartbeat('w1', array[%s]::bigint[])$$, :a1), 'A second beat answers nothing.');
select is((select lease_expires_at from conductor.tasks where id = :t1), '2030-01-01 00:02:00+00'::timestamptz,
  'The default lease is 60 seconds from now, even when that shortens the lease held.');

select * from finish();
rollback;
