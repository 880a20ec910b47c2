-- fire_schedule (Run now), called as conductor_admin, enqueues one task of the schedule now,
-- records a manual fire, and leaves next_due_at, last_due_at and last_task_id alone; a due
-- time at the same instant as a manual fire still fires once; tick after a manual fire goes
-- on as before; a disabled schedule can be fired; an unknown one is QC203; only admins may.
begin;
select plan(14);

create role t_admin;
grant conductor_admin to t_admin;
create role t_worker;
grant conductor_worker to t_worker;

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.create_schedule('fs-s', '*/10 * * * *', 'fs.k', '{"a": 1}', queue => 'fs-q', priority => 3) as c \gset
set local conductor.fake_now = '2030-01-01 00:10:00+00';
select count(*) from conductor.tick() \gset
select last_task_id as tick_task from conductor.schedules where name = 'fs-s' \gset

set local conductor.fake_now = '2030-01-01 00:15:00+00';
set local role t_admin;
select conductor.fire_schedule('fs-s') as manual_task \gset
reset role;
select is((select (kind, payload, queue, priority, status, run_at)::text from conductor.tasks where id = :manual_task),
  ('fs.k', '{"a": 1}'::jsonb, 'fs-q', 3, 'queued', '2030-01-01 00:15:00+00'::timestamptz)::text,
  'Run now enqueues the schedule''s task, due now.');
select is((select (due_at, fired_at, manual)::text from conductor.schedule_fires where task_id = :manual_task),
  ('2030-01-01 00:15:00+00'::timestamptz, '2030-01-01 00:15:00+00'::timestamptz, true)::text,
  'A manual fire is recorded at the time it was asked.');
select is((select (next_due_at, last_due_at, last_task_id)::text from conductor.schedules where name = 'fs-s'),
  ('2030-01-01 00:20:00+00'::timestamptz, '2030-01-01 00:10:00+00'::timestamptz, :tick_task::bigint)::text,
  'next_due_at, last_due_at and last_task_id are untouched.');
select is((select last_fired_at from conductor.list_schedules() where name = 'fs-s'), '2030-01-01 00:15:00+00'::timestamptz,
  'list_schedules shows it as the last fire.');

-- a manual fire at the very instant of a due time; the due time still fires once
set local conductor.fake_now = '2030-01-01 00:20:00+00';
select conductor.fire_schedule('fs-s') as manual_at_due \gset
select results_eq($$select due_at from conductor.tick()$$, $$values ('2030-01-01 00:20:00+00'::timestamptz)$$,
  'tick still fires the due time that a manual fire shares its instant with.');
select is((select count(*)::int from conductor.schedule_fires where schedule_name = 'fs-s' and due_at = '2030-01-01 00:20:00+00'), 2,
  'Two fire rows at 00:20: the manual one and the due time''s.');
select is((select task_id from conductor.schedule_fires where task_id = :manual_at_due and manual), :manual_at_due::bigint,
  'tick left the manual fire''s task in its row.');
select is_empty($$select * from conductor.tick()$$, 'A second tick at 00:20 fires nothing: the due time fired once.');
set local conductor.fake_now = '2030-01-01 00:30:00+00';
select results_eq($$select due_at from conductor.tick()$$, $$values ('2030-01-01 00:30:00+00'::timestamptz)$$,
  'The next due time fires as before.');
select is((select count(*)::int from conductor.tasks where kind = 'fs.k'), 5,
  'Five tasks: three due times and two manual fires.');

select conductor.enable_schedule('fs-s', false) as c \gset
set local role t_admin;
select lives_ok($$select conductor.fire_schedule('fs-s')$$, 'A disabled schedule can be run now.');
select throws_ok($$select conductor.fire_schedule('fs-nope')$$, 'QC203', 'schedule ''fs-nope'' does not exist',
  'An unknown schedule is refused with QC203.');
reset role;
select is((select next_due_at from conductor.schedules where name = 'fs-s'), '2030-01-01 00:40:00+00'::timestamptz,
  'The disabled schedule keeps its next due time.');
set local role t_worker;
select throws_ok($$select conductor.fire_schedule('fs-s')$$, '42501', NULL, 'A worker may not run a schedule now.');
reset role;

select * from finish();
rollback;
