-- heartbeat refuses, with QC106 naming the value, a lease longer than conductor.settings.max_lease
-- (one hour unless an admin changed it) and a non-positive one; a lease of exactly the maximum
-- is granted, and the refused calls extend nothing.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'hb-max') as t \gset
select conductor_tests.claim_one('hb-max') as a \gset
select lease_expires_at as before from conductor.tasks where id = :t \gset

select throws_ok(format($$select * from conductor.heartbeat('w1', array[%s]::bigint[], '1 hour 1 second')$$, :a), 'QC106',
  'invalid lease 01:00:01: at most 01:00:00 (conductor.settings.max_lease)',
  'A lease over max_lease is refused with QC106, the message naming it and the maximum.');
select throws_ok(format($$select * from conductor.heartbeat('w1', array[%s]::bigint[], '100 years')$$, :a), 'QC106',
  'invalid lease 100 years: at most 01:00:00 (conductor.settings.max_lease)',
  'An absurd lease is refused with QC106.');
select throws_ok(format($$select * from conductor.heartbeat('w1', array[%s]::bigint[], '-1 hour')$$, :a), 'QC106',
  'invalid lease -01:00:00: it must be positive', 'A negative lease is refused with QC106.');
select throws_ok(format($$select * from conductor.heartbeat('w1', array[%s]::bigint[], '0')$$, :a), 'QC106',
  'invalid lease 00:00:00: it must be positive', 'A zero lease is refused with QC106.');
select is((select lease_expires_at from conductor.tasks where id = :t), :'before'::timestamptz,
  'The refused heartbeats extended nothing.');

select is_empty(format($$select * from conductor.heartbeat('w1', array[%s]::bigint[], '1 hour')$$, :a),
  'A lease of exactly max_lease is granted.');
update conductor.settings set max_lease = interval '2 hours';
select is((select count(*) from conductor.heartbeat('w1', array[:a]::bigint[], '2 hours')), 0::bigint,
  'An admin may raise max_lease, and the longer lease is then granted.');

select * from finish();
rollback;
