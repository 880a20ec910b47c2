-- A worker login deletes no history it does not own (issue 25). v0.2.0: as a second
-- conductor_worker login, configure_kind('invoice', retain_succeeded => '0 s', retain_failed
-- => '0 s') then apply_retention() deleted another application's runs that had finished a
-- moment earlier. Now the first call is refused (QC208 for a kind another login declared,
-- QC106 under settings.min_retention for one nobody declared) and nothing goes. Defence in
-- depth: apply_retention itself keeps every run of a kind whose row no admin wrote for at
-- least the floor, whatever the row says (a v0.2.0 row of 0 s, owner NULL; a worker's row
-- under a floor an admin raised since), whoever calls it; an admin's row and the settings
-- apply as they are.
begin;
select plan(15);
\ir ../helpers.psql

create role t_billing;
grant conductor_worker to t_billing;
create role t_attacker;
grant conductor_worker to t_attacker;
create role t_admin;
grant conductor_admin to t_admin;

set local role t_billing;
select conductor.configure_kind('invoice', queue => 'billing');
reset role;
-- v0.2.0's rows, as the upgrade leaves them (owner NULL), and a worker's row under a raised floor
insert into conductor.kinds (kind, retain_succeeded, retain_failed, updated_at)
values ('legacy', '0 s', '0 s', now());
insert into conductor.kinds (kind, retain_succeeded, updated_at, owner)
values ('lowered', '1 hour', now(), 't_billing');
set local role t_admin;
select conductor.configure_kind('scratch', retain_succeeded => '0 s', retain_failed => '0 s');
reset role;

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.enqueue('invoice', '{}', 'billing') as invoice_ok \gset
select conductor.complete(conductor_tests.claim_one('billing')) as done \gset
select conductor.enqueue('invoice', '{}', 'billing') as invoice_failed \gset
select conductor.fail(conductor_tests.claim_one('billing'), 'boom') as failed \gset
select conductor.enqueue('receipt', '{}', 'billing') as receipt \gset
select conductor.complete(conductor_tests.claim_one('billing')) as done \gset
select conductor.enqueue('legacy', '{}', 'billing') as legacy \gset
select conductor.complete(conductor_tests.claim_one('billing')) as done \gset
select conductor.enqueue('lowered', '{}', 'billing') as lowered \gset
select conductor.complete(conductor_tests.claim_one('billing')) as done \gset
select conductor.enqueue('scratch', '{}', 'billing') as scratch \gset
select conductor.complete(conductor_tests.claim_one('billing')) as done \gset

set local conductor.fake_now = '2030-01-01 00:01:00+00';
set local role t_attacker;
select throws_ok($$select conductor.configure_kind('invoice', retain_succeeded => '0 s', retain_failed => '0 s')$$,
  'QC208', NULL, 'The attacker cannot shorten the retention of a kind another login declared (QC208).');
select throws_ok($$select conductor.configure_kind('receipt', retain_succeeded => '0 s', retain_failed => '0 s')$$,
  'QC106', NULL, 'Nor declare a kind nobody declared with a retention under the floor (QC106).');
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 1::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'A minute after they finished, its apply_retention deletes one run: the admin''s kind of 0 s.');
reset role;
select is_empty(format('select from conductor.tasks where id = %s', :scratch),
  'That run of the admin''s kind (retention 0 s) went: an admin''s row applies as it is.');
select is((select count(*) from conductor.tasks where id in (:invoice_ok, :invoice_failed, :receipt)), 3::bigint,
  'The other application''s runs that finished a minute ago are all still there.');
select is((select count(*) from conductor.tasks where id in (:legacy, :lowered)), 2::bigint,
  'So are the runs of the v0.2.0 row of 0 s and of the worker''s row of 1 hour: the floor holds.');

set local conductor.fake_now = '2030-01-01 23:59:59+00';
set local role t_attacker;
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 0::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'Just under a day after, nothing goes.');
set local conductor.fake_now = '2030-01-02 00:00:01+00';
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 2::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'Past the floor (1 day), the legacy and the lowered runs go: their rows ask for less, the floor is what is kept.');
reset role;
select is((select count(*) from conductor.tasks where id in (:legacy, :lowered)), 0::bigint, 'Both went.');
select is((select count(*) from conductor.tasks where id in (:invoice_ok, :invoice_failed, :receipt)), 3::bigint,
  'The other runs keep the settings'' retention (7 and 30 days).');

set local conductor.fake_now = '2030-01-08 00:00:01+00';
set local role t_attacker;
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 2::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'After 7 days the two succeeded runs go, as the settings say.');
reset role;

-- the floor applies to kinds, not to the admin's settings
update conductor.settings set retain_failed = '0 s';
set local role t_attacker;
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 0::bigint), ('failed_runs', 1::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'The admin''s settings apply as they are (retain_failed 0 s).');
reset role;

-- an admin who lowers the floor lets the rows under it apply
update conductor.settings set min_retention = '0 s';
insert into conductor.kinds (kind, retain_succeeded, updated_at) values ('legacy2', '0 s', now());
select conductor.enqueue('legacy2', '{}', 'billing') as legacy2 \gset
select conductor.complete(conductor_tests.claim_one('billing')) as done \gset
set local conductor.fake_now = '2030-01-08 00:00:02+00';
set local role t_attacker;
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 1::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'With the floor at 0 s, a row of 0 s deletes a run a second after it finished.');
reset role;

select throws_ok($$set local role t_attacker; select conductor.prune(older_than => '0 s')$$, '42501', NULL,
  'prune stays an admin''s.');
reset role;
select is((select count(*) from conductor.tasks where queue = 'billing'), 0::bigint, 'Nothing is left.');

select * from finish();
rollback;
