-- conductor.now(): the one clock, faked by the setting conductor.fake_now where an admin switched
-- conductor.settings.fake_clock on (pgtap.sh does for the test database; settings/ checks it off).
begin;
select plan(4);

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select is(conductor.now(), '2030-01-01 00:00:00+00'::timestamptz,
  'conductor.now() returns conductor.fake_now when it is set.');

set local conductor.fake_now = '2030-06-15 12:34:56.789+02';
select is(conductor.now(), '2030-06-15 10:34:56.789+00'::timestamptz,
  'Moving the fake clock moves conductor.now() to the exact instant, fractions included.');

set local conductor.fake_now = '';
select is(conductor.now(), now(),
  'An empty conductor.fake_now means the real clock: the transaction''s now().');

reset conductor.fake_now;
select is(conductor.now(), now(),
  'Without conductor.fake_now, conductor.now() is the transaction''s now().');

select * from finish();
rollback;
