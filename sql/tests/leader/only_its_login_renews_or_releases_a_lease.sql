-- A lease belongs to its holder string and the login that took it: another worker login
-- using the same holder string neither renews nor releases it before it expires, and takes
-- it over only once it has.
begin;
select plan(5);
\ir ../helpers.psql

create role t_lead_owner;
grant conductor_worker to t_lead_owner;
create role t_lead_other;
grant conductor_worker to t_lead_other;

set local conductor.fake_now = '2030-01-01 00:00:00+00';
set local role t_lead_owner;
select is(conductor.try_lead('owned-lead', 'holder-x', interval '10 seconds'), true, 'One login takes the lease.');
reset role;

set local role t_lead_other;
select is(conductor.try_lead('owned-lead', 'holder-x', interval '10 seconds'), false,
  'Another login with the same holder string does not renew it.');
select is(conductor.release_lead('owned-lead', 'holder-x'), false, 'Nor release it.');
reset role;
select results_eq($$select login, expires_at from conductor.leaders(array['owned-lead'])$$,
  $$values ('t_lead_owner'::text, '2030-01-01 00:00:10+00'::timestamptz)$$, 'The lease is as its login left it.');

set local conductor.fake_now = '2030-01-01 00:00:10+00';
set local role t_lead_other;
select is(conductor.try_lead('owned-lead', 'holder-x', interval '10 seconds'), true,
  'Once it expired, the other login takes it over.');
reset role;

select * from finish();
rollback;
