-- A queue cap is the login's that set it, like a rate limit: another worker login may not
-- raise, lower or remove it (QC208 naming the owner, nothing changes); setting it exactly as
-- stored succeeds for anyone; an admin may change it, and then it is the admin's.
begin;
select plan(6);
\ir ../helpers.psql

create role t_ops;
grant conductor_admin to t_ops;
create role t_billing;
grant conductor_worker to t_billing;
create role t_attacker;
grant conductor_worker to t_attacker;

set local role t_billing;
select conductor.set_queue_limit('ql-billing', 20) as s \gset
reset role;

set local role t_attacker;
select throws_ok($$select conductor.set_queue_limit('ql-billing', 1000000)$$, 'QC208',
  'the cap of queue ''ql-billing'' was declared by login ''t_billing'': only that login or an admin may change it',
  'Another worker login cannot lift the cap (QC208, naming the owner).');
select throws_ok($$select conductor.set_queue_limit('ql-billing', 1)$$, 'QC208', NULL, 'Nor lower it.');
select throws_ok($$select conductor.set_queue_limit('ql-billing')$$, 'QC208', NULL, 'Nor remove it.');
select lives_ok($$select conductor.set_queue_limit('ql-billing', 20)$$,
  'Setting it exactly as stored succeeds for anyone: no change.');
reset role;
select results_eq($$select max_running, owner from conductor.queue_limits where queue = 'ql-billing'$$,
  $$values (20, 't_billing'::text)$$, 'The cap is unchanged, still its setter''s.');

set local role t_ops;
select conductor.set_queue_limit('ql-billing', 5) as s \gset
reset role;
select results_eq($$select max_running, owner from conductor.queue_limits where queue = 'ql-billing'$$,
  $$values (5, 't_ops'::text)$$, 'An admin changes it, and then it is the admin''s.');

select * from finish();
rollback;
