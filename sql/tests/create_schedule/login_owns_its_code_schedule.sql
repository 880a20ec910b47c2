-- A schedule declared from code belongs to the login that declared it: another worker
-- login may not replace, change or disable it (QC208, nothing changes), though it may
-- re-declare it exactly as stored. The declaring login and an admin may change it; once
-- an admin has, it is the operator's (QC207, as before) for the declaring login too.
begin;
select plan(16);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_billing;
grant conductor_worker to t_billing;
create role t_attacker;
grant conductor_worker to t_attacker;
create role t_admin;
grant conductor_admin to t_admin;

set local role t_billing;
select conductor.create_schedule('billing-nightly', '0 2 * * *', 'billing.close', '{"ledger": "main"}',
                                 queue => 'billing', replace => true) as c \gset
reset role;
create temp table before as select to_jsonb(s) as row from conductor.schedules s where name = 'billing-nightly';
grant select on before to t_attacker;

set local conductor.fake_now = '2030-01-01 00:30:00+00';
set local role t_attacker;
select throws_ok($$select conductor.create_schedule('billing-nightly', '0 2 * * *', 'billing.close', '{"ledger": "main"}',
                                                     queue => 'billing', enabled => false, replace => true)$$,
  'QC208', NULL, 'Another worker login cannot disable a code-declared schedule: QC208.');
select throws_ok($$select conductor.create_schedule('billing-nightly', '0 2 * * *', 'evil', '{"ledger": "main"}',
                                                     queue => 'billing', replace => true)$$,
  'QC208', NULL, 'Nor re-route it to another kind: QC208.');
select throws_ok($$select conductor.create_schedule('billing-nightly', '* * * * * *', 'billing.close', '{"ledger": "main"}',
                                                     queue => 'billing', replace => true)$$,
  'QC208', NULL, 'Nor change its cron line: QC208.');
select throws_ok($$select conductor.create_schedule('billing-nightly', '0 2 * * *', 'billing.close', '{"ledger": "main"}',
                                                     queue => 'blackhole', replace => true)$$,
  'QC208', NULL, 'Nor its queue: QC208.');
select throws_like($$select conductor.create_schedule('billing-nightly', '0 2 * * *', 'billing.close', replace => true)$$,
  'schedule ''billing-nightly'' was declared by login ''t_billing''%',
  'The message names the schedule and the login that declared it.');
select throws_ok($$select conductor.create_schedule('billing-nightly', '0 2 * * *', 'billing.close')$$,
  'QC206', NULL, 'Without replace it is still QC206 (already exists).');
select is((select to_jsonb(s) from conductor.schedules s where name = 'billing-nightly'), (select row from before),
  'None of the refused calls changed anything.');
select is(
  (select to_jsonb(r) from conductor.create_schedule('billing-nightly', '0 2 * * *', 'billing.close', '{"ledger": "main"}',
                                                      queue => 'billing', replace => true) r),
  (select row from before),
  'Re-declaring it exactly as stored is no change: it answers the row.');
select is((select to_jsonb(s) from conductor.schedules s where name = 'billing-nightly'), (select row from before),
  'and writes nothing.');
select lives_ok($$select conductor.create_schedule('attacker-own', '0 * * * *', 'attacker.kind', replace => true)$$,
  'The other login still declares schedules of its own.');

set local role t_billing;
select is((select (cron, enabled, owner, declared_by)::text
             from conductor.create_schedule('billing-nightly', '0 1 * * *', 'billing.close', '{"ledger": "main"}',
                                            queue => 'billing', enabled => false, replace => true)),
  '("0 1 * * *",f,t_billing,code)', 'The declaring login changes and disables its own schedule.');
select throws_ok($$select conductor.create_schedule('attacker-own', '0 * * * *', 'attacker.kind', enabled => false,
                                                     replace => true)$$,
  'QC208', NULL, 'and it cannot change the other login''s either.');

set local role t_admin;
select is((select (cron, owner, declared_by, changed_by)::text
             from conductor.create_schedule('billing-nightly', '0 3 * * *', 'billing.close', '{"ledger": "main"}',
                                            queue => 'billing', replace => true)),
  '("0 3 * * *",t_billing,admin,t_admin)',
  'An admin may change it: it becomes the operator''s, and still names the login that declared it.');
set local role t_billing;
select throws_ok($$select conductor.create_schedule('billing-nightly', '0 1 * * *', 'billing.close', '{"ledger": "main"}',
                                                     queue => 'billing', replace => true)$$,
  'QC207', NULL, 'After an admin''s change even the declaring login gets QC207: an operator''s schedule.');
set local role t_attacker;
select throws_ok($$select conductor.create_schedule('billing-nightly', '0 1 * * *', 'billing.close', replace => true)$$,
  'QC207', NULL, 'and so does any other worker login.');

reset role;
select is((select owner from conductor.schedules where name = 'attacker-own'), 't_attacker',
  'Each schedule records the login that created it.');

select * from finish();
rollback;
