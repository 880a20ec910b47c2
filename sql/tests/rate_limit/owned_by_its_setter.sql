-- A rate limit is the login's that set it (issue 25). v0.2.0: as a second conductor_worker
-- login, set_rate_limit(queue => 'billing', per_second => 1e-300, burst => 1) overrode an
-- operator's 50/s, and set_rate_limit(queue => 'billing') deleted it. Now both raise QC208
-- naming the owner and change nothing, as does another worker login's change of a worker's
-- limit; setting a limit exactly as stored succeeds for anyone (no change); its owner and an
-- admin may change or remove it, and an admin's change makes it the admin's.
begin;
select plan(14);
\ir ../helpers.psql
set local conductor.fake_now = '2032-06-01 00:00:00+00';

create role t_ops;
grant conductor_admin to t_ops;
create role t_billing;
grant conductor_worker to t_billing;
create role t_attacker;
grant conductor_worker to t_attacker;

set local role t_ops;
select conductor.set_rate_limit(queue => 'billing', per_second => 50);
reset role;
set local role t_billing;
select conductor.set_rate_limit(kind => 'invoice', per_second => 20, burst => 40);
reset role;
select results_eq($$select scope, name, owner from conductor.rate_limits where name in ('billing', 'invoice') order by scope$$,
  $$values ('kind'::text, 'invoice'::text, 't_billing'::text), ('queue', 'billing', 't_ops')$$,
  'Each limit records the login that set it.');
select jsonb_agg(to_jsonb(r) order by scope) as stored from conductor.rate_limits r where name in ('billing', 'invoice') \gset

set local role t_attacker;
select throws_ok($$select conductor.set_rate_limit(queue => 'billing', per_second => 1e-300, burst => 1)$$, 'QC208',
  'the rate limit of queue ''billing'' was declared by login ''t_ops'': only that login or an admin may change it',
  'Another worker login cannot override an operator''s limit (QC208, naming the owner).');
select throws_ok($$select conductor.set_rate_limit(queue => 'billing', per_second => 1000000)$$, 'QC208', NULL,
  'Nor lift it.');
select throws_ok($$select conductor.set_rate_limit(queue => 'billing')$$, 'QC208', NULL, 'Nor delete it.');
select throws_ok($$select conductor.set_rate_limit(kind => 'invoice', per_second => 1)$$, 'QC208',
  'the rate limit of kind ''invoice'' was declared by login ''t_billing'': only that login or an admin may change it',
  'Nor change another worker login''s limit.');
select throws_ok($$select conductor.set_rate_limit(kind => 'invoice', per_second => null)$$, 'QC208', NULL,
  'Nor delete it.');
select lives_ok($$select conductor.set_rate_limit(queue => 'billing', per_second => 50)$$,
  'Setting a limit exactly as stored succeeds for anyone: no change.');
reset role;
select is((select jsonb_agg(to_jsonb(r) order by scope) from conductor.rate_limits r where name in ('billing', 'invoice')),
  :'stored'::jsonb, 'Every refused call, and the equal one, left both limits exactly as they were.');

-- the operator's 50/s still holds: 50 starts at once (the full bucket), not one
select count(*) as n from (select conductor.enqueue('k', '{}', 'billing') from generate_series(1, 60)) e \gset
select is((select count(*) from conductor.claim('w1', array['billing'], 60)), 50::bigint,
  'Claims still draw from the operator''s bucket of 50.');

set local role t_billing;
select lives_ok($$select conductor.set_rate_limit(kind => 'invoice', per_second => 10)$$, 'The owner changes its limit.');
reset role;
select is((select (per_second, owner)::text from conductor.rate_limits where name = 'invoice'), (10, 't_billing')::text,
  'The change is stored, still the owner''s.');
set local role t_ops;
select lives_ok($$select conductor.set_rate_limit(kind => 'invoice', per_second => 5)$$,
  'An admin changes a worker login''s limit.');
reset role;
select is((select (per_second, owner)::text from conductor.rate_limits where name = 'invoice'), (5, 't_ops')::text,
  'The limit is the admin''s now.');
set local role t_billing;
select throws_ok($$select conductor.set_rate_limit(kind => 'invoice', per_second => 10)$$, 'QC208', NULL,
  'And the worker login that set it first can no longer change it.');
reset role;

select * from finish();
rollback;
