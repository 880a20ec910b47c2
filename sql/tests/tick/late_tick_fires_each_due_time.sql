-- What grace is for: a tick that is merely late (every due time it finds passed at most
-- grace ago: a scheduler ran, its tick came a little late, a new leader took over) still
-- fires each due time once, oldest first, at most catch_up_limit of them. Only a due time
-- older than grace counts as missed (no scheduler ran through it); the boundary is the
-- one overdue_schedules uses.
begin;
select plan(8);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('s', '* * * * * *', 'ks') as c \gset
select conductor.create_schedule('capped', '* * * * * *', 'kc', catch_up_limit => 3) as c \gset

set local conductor.fake_now = '2030-01-01 00:00:04.5+00';
create temp table fired as select * from conductor.tick();
select results_eq($$select due_at from fired where schedule_name = 's' order by due_at$$,
  $$values ('2030-01-01 00:00:01+00'::timestamptz), ('2030-01-01 00:00:02+00'), ('2030-01-01 00:00:03+00'),
           ('2030-01-01 00:00:04+00')$$,
  'A tick 3.5 seconds late fires each of the four due times within grace, oldest first.');
select is((select next_due_at from conductor.schedules where name = 's'), '2030-01-01 00:00:05+00'::timestamptz,
  'and the schedule goes on at the next second.');
select results_eq($$select due_at from fired where schedule_name = 'capped' order by due_at$$,
  $$values ('2030-01-01 00:00:01+00'::timestamptz), ('2030-01-01 00:00:02+00'), ('2030-01-01 00:00:03+00')$$,
  'A late tick fires at most catch_up_limit (3) due times of a schedule,');
select is((select next_due_at from conductor.schedules where name = 'capped'), '2030-01-01 00:00:05+00'::timestamptz,
  'and skips the rest (00:04): next due after now.');

-- exactly grace late is still on time; a microsecond more is missed
set local conductor.fake_now = '2030-01-01 00:01:05+00';
select is((select count(*) from conductor.tick() where schedule_name = 's'), 61::bigint,
  'A tick exactly a grace (1 minute) after the oldest due time fires all 61 due times.');
set local conductor.fake_now = '2030-01-01 00:02:06.000001+00';
select is((select count(*) from conductor.tick() where schedule_name = 's'), 1::bigint,
  'One a microsecond later than that fires once.');
select is((select next_due_at from conductor.schedules where name = 's'), '2030-01-01 00:02:07+00'::timestamptz,
  'and goes on from the next future time.');
set local conductor.fake_now = '2030-01-01 00:03:07+00';
select ok(not exists (select from conductor.overdue_schedules() where name = 's')
          and exists (select from conductor.tick() where schedule_name = 's'),
  'A schedule overdue_schedules does not name yet fires each due time.');

select * from finish();
rollback;
