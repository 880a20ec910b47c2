-- A lease lasts until conductor.now() + lease: refused to others before, taken over by
-- anyone after; the first holder, late, cannot renew it then. since is when the holder
-- first took it; a renewal keeps it. All on the fake clock, in this transaction.
begin;
select plan(9);
\ir ../helpers.psql

create role t_lead_worker;
grant conductor_worker to t_lead_worker;
set local role t_lead_worker;

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select is(conductor.try_lead('fake-lead', 'a', interval '10 seconds'), true, 'Holder a takes the lease for 10 s.');
select results_eq($$select holder, since, expires_at from conductor.leaders(array['fake-lead'])$$,
  $$values ('a'::text, '2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:00:10+00'::timestamptz)$$,
  'leaders() names the holder, since when, and until when.');

set local conductor.fake_now = '2030-01-01 00:00:06+00';
select is(conductor.try_lead('fake-lead', 'a', interval '10 seconds'), true, 'The holder renews it after 6 s.');
select results_eq($$select since, expires_at from conductor.leaders(array['fake-lead'])$$,
  $$values ('2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:00:16+00'::timestamptz)$$,
  'A renewal moves the expiry and keeps since.');

set local conductor.fake_now = '2030-01-01 00:00:15.999+00';
select is(conductor.try_lead('fake-lead', 'b', interval '10 seconds'), false, 'Another holder is refused while the lease runs.');

set local conductor.fake_now = '2030-01-01 00:00:16+00';
select is_empty($$select * from conductor.leaders(array['fake-lead'])$$, 'An expired lease is not listed.');
select is(conductor.try_lead('fake-lead', 'b', interval '10 seconds'), true, 'Once it expired, another holder takes it over.');
select results_eq($$select holder, since from conductor.leaders(array['fake-lead'])$$,
  $$values ('b'::text, '2030-01-01 00:00:16+00'::timestamptz)$$, 'since is when the new holder took it.');
select is(conductor.try_lead('fake-lead', 'a', interval '10 seconds'), false,
  'The first holder, late, cannot renew what another holds now: it must stop acting as leader.');

select * from finish();
rollback;
