-- enable_schedule turns a schedule off and on; a disabled schedule does not fire, and
-- enabling starts from now without firing what passed while it was off.
begin;
select plan(7);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('e', '*/10 * * * *', 'k') as c \gset

select is((select enabled from conductor.enable_schedule('e', false)), false,
  'enable_schedule(name, false) returns the row, disabled.');
select is((select next_due_at from conductor.schedules where name = 'e'), '2030-01-01 00:10:00+00'::timestamptz,
  'Disabling keeps next_due_at.');

set local conductor.fake_now = '2030-01-01 00:25:00+00';
select is_empty($$select * from conductor.tick() where schedule_name = 'e'$$,
  'A disabled schedule does not fire though its due time passed.');

select is(
  (select jsonb_build_object('enabled', enabled, 'next_due_at', next_due_at) from conductor.enable_schedule('e')),
  jsonb_build_object('enabled', true, 'next_due_at', '2030-01-01 00:30:00+00'::timestamptz),
  'enable_schedule(name) enables it and restarts from now: next due at 00:30.');
select is_empty($$select * from conductor.tick() where schedule_name = 'e'$$,
  'Due times passed while it was off (00:10, 00:20) are not fired.');

set local conductor.fake_now = '2030-01-01 00:30:00+00';
select results_eq($$select due_at from conductor.tick() where schedule_name = 'e'$$,
  $$values ('2030-01-01 00:30:00+00'::timestamptz)$$,
  'Once enabled it fires at its next due time.');

select throws_ok($$select conductor.enable_schedule('no-such-schedule')$$, 'QC203', NULL,
  'Enabling a schedule that does not exist raises QC203.');

select * from finish();
rollback;
