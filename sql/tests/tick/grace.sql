-- A due time late by at most grace fires as if on time; one missed by more than grace
-- means no scheduler ran through it, and a 'once' schedule then fires once for everything
-- passed and goes on from the next future time. grace must not be negative.
begin;
select plan(7);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('g', '*/10 * * * *', 'k') as c \gset
set local conductor.fake_now = '2030-01-01 00:10:59+00';
select results_eq($$select due_at from conductor.tick()$$, $$values ('2030-01-01 00:10:00+00'::timestamptz)$$,
  'A due time 59 seconds late fires within the default grace of a minute.');

select conductor.create_schedule('m', '* * * * *', 'k') as c \gset
set local conductor.fake_now = '2030-01-01 00:13:30+00';
select results_eq($$select due_at from conductor.tick() where schedule_name = 'm'$$,
  $$values ('2030-01-01 00:11:00+00'::timestamptz)$$,
  'With the default grace, 00:11 (late by more than a minute) was missed: the schedule fires once for the '
  || 'stretch, at 00:11, and 00:12 and 00:13 (within a minute) do not fire as well.');
select is((select next_due_at from conductor.schedules where name = 'm'), '2030-01-01 00:14:00+00'::timestamptz,
  'It goes on from the next future time.');

select conductor.create_schedule('w', '* * * * *', 'k') as c \gset
set local conductor.fake_now = '2030-01-01 00:17:30+00';
select results_eq($$select due_at from conductor.tick(grace => interval '5 minutes') where schedule_name = 'w'$$,
  $$values ('2030-01-01 00:14:00+00'::timestamptz), ('2030-01-01 00:15:00+00'), ('2030-01-01 00:16:00+00'),
           ('2030-01-01 00:17:00+00')$$,
  'With grace 5 minutes every minute missed by less than that fires.');

select conductor.create_schedule('z', '* * * * *', 'k') as c \gset
set local conductor.fake_now = '2030-01-01 00:21:30+00';
select results_eq($$select due_at from conductor.tick(grace => interval '0') where schedule_name = 'z'$$,
  $$values ('2030-01-01 00:18:00+00'::timestamptz)$$,
  'With grace 0 a late schedule fires once, for the earliest missed minute.');
select is((select next_due_at from conductor.schedules where name = 'z'), '2030-01-01 00:22:00+00'::timestamptz,
  'and goes on at the next minute.');

select throws_ok($$select * from conductor.tick(grace => interval '-1 second')$$, 'QC106', NULL,
  'A negative grace is refused with QC106.');

select * from finish();
rollback;
