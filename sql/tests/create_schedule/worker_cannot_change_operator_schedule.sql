-- A worker cannot rewrite or disable a schedule that an admin created or changed:
-- create_schedule(replace => true) from a role without conductor_admin raises QC207 and
-- changes nothing. Re-declaring it unchanged (a worker restarting) still answers the row.
begin;
select plan(12);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;
create role t_admin;
grant conductor_admin to t_admin;

-- one schedule an operator created, one that code declared and an operator then changed
set local role t_admin;
select conductor.create_schedule('ops', '0 3 * * *', 'backup') as c \gset
select is((select declared_by from conductor.schedules where name = 'ops'), 'admin',
  'A schedule an admin creates is recorded as declared by admin.');
set local role t_worker;
select conductor.create_schedule('declared', '0 * * * *', 'report', replace => true) as c \gset
set local role t_admin;
select conductor.enable_schedule('declared', false) as c \gset
select is((select (declared_by, changed_by)::text from conductor.schedules where name = 'declared'),
  '(admin,t_admin)', 'An admin disabling a code schedule makes it the operator''s.');

create temp table before as select name, to_jsonb(s) as row from conductor.schedules s;
grant select on before to t_worker;
set local conductor.fake_now = '2030-01-01 00:30:00+00';
set local role t_worker;

select throws_ok($$select conductor.create_schedule('ops', '* * * * *', 'backup', enabled => false, replace => true)$$,
  'QC207', NULL, 'A worker cannot disable an operator''s schedule: QC207.');
select throws_ok($$select conductor.create_schedule('ops', '0 3 * * *', 'evil', replace => true)$$,
  'QC207', NULL, 'A worker cannot change the kind of an operator''s schedule: QC207.');
select throws_like($$select conductor.create_schedule('ops', '0 4 * * *', 'backup', replace => true)$$,
  'schedule ''ops'' was created or changed by an operator%',
  'The message names the schedule and says why.');
select throws_ok($$select conductor.create_schedule('declared', '0 * * * *', 'report', enabled => true, replace => true)$$,
  'QC207', NULL, 'A worker cannot switch back on a code schedule an operator turned off: QC207.');
select throws_ok($$select conductor.create_schedule('ops', '0 3 * * *', 'backup')$$,
  'QC206', NULL, 'Without replace it is still QC206 (already exists).');
select is(
  (select jsonb_object_agg(name, to_jsonb(s)) from conductor.schedules s),
  (select jsonb_object_agg(name, row) from before),
  'None of the refused calls changed anything.');

select lives_ok($$select conductor.create_schedule('ops', '0 3 * * *', 'backup', replace => true)$$,
  'Re-declaring an operator''s schedule exactly as it is (a worker restarting) is not a change: it answers.');
select is((select enabled from conductor.create_schedule('declared', '0 * * * *', 'report', replace => true)),
  false, 'Re-declaring a code schedule an operator disabled, without saying enabled, answers it still off.');
select is(
  (select jsonb_object_agg(name, to_jsonb(s)) from conductor.schedules s),
  (select jsonb_object_agg(name, row) from before),
  'The unchanged re-declarations wrote nothing.');

set local role t_admin;
select lives_ok($$select conductor.create_schedule('ops', '0 4 * * *', 'backup', replace => true)$$,
  'An admin may replace an operator''s schedule.');

reset role;
select * from finish();
rollback;
