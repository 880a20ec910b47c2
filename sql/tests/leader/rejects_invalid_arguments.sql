-- try_lead refuses a name or holder NULL, empty or over 200 characters, and a lease not in
-- (0, 1 hour], with QC106 naming the value; nothing is written.
begin;
select plan(9);
\ir ../helpers.psql

select throws_ok($$select conductor.try_lead(null, 'h', interval '1 minute')$$, 'QC106', 'invalid leader name NULL: 1 to 200 characters',
  'A NULL name is refused.');
select throws_ok($$select conductor.try_lead('', 'h', interval '1 minute')$$, 'QC106', NULL, 'An empty name is refused.');
select throws_ok(format('select conductor.try_lead(%L, %L, interval ''1 minute'')', repeat('n', 201), 'h'), 'QC106', NULL,
  'A name over 200 characters is refused.');
select throws_ok($$select conductor.try_lead('n', '', interval '1 minute')$$, 'QC106', 'invalid leader holder '''': 1 to 200 characters',
  'An empty holder is refused.');
select throws_ok($$select conductor.try_lead('n', null, interval '1 minute')$$, 'QC106', NULL, 'A NULL holder is refused.');
select throws_ok($$select conductor.try_lead('n', 'h', interval '0')$$, 'QC106', 'invalid lease 00:00:00: more than 0 and at most 1 hour',
  'A lease of 0 is refused.');
select throws_ok($$select conductor.try_lead('n', 'h', interval '1 hour 1 second')$$, 'QC106', NULL,
  'A lease over an hour is refused.');
select throws_ok($$select conductor.try_lead('n', 'h', null)$$, 'QC106', NULL, 'A NULL lease is refused.');
select is_empty($$select * from conductor.leader_leases where name = 'n'$$, 'Nothing was written.');

select * from finish();
rollback;
