-- A worker re-declaring its schedules (replace => true) does not switch back on a
-- schedule that an operator turned off; passing enabled explicitly still does.
begin;
select plan(3);

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.create_schedule('nightly', '0 3 * * *', 'report');
select conductor.enable_schedule('nightly', false);

select conductor.create_schedule('nightly', '0 3 * * *', 'report', replace => true);
select is((select enabled from conductor.schedules where name = 'nightly'), false,
  'Replacing a disabled schedule without saying enabled keeps it disabled.');

select conductor.create_schedule('nightly', '0 3 * * *', 'report', replace => true, enabled => true);
select is((select enabled from conductor.schedules where name = 'nightly'), true,
  'Replacing it with enabled => true switches it on.');

select conductor.create_schedule('fresh', '0 3 * * *', 'report');
select is((select enabled from conductor.schedules where name = 'fresh'), true,
  'A new schedule is enabled unless told otherwise.');

select * from finish();
rollback;
