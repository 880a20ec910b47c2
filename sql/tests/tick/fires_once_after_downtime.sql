-- The seed's rule: "If no scheduler was running through several scheduled times, the
-- schedule fires once when one starts again, then continues from the next future time."
-- A due time older than grace means no scheduler ticked through it: a catch_up 'once'
-- schedule then fires one task for everything missed, due times within grace included,
-- and goes on from the first due time after now.
begin;
select plan(9);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('every-5s', '*/5 * * * * *', 'k5') as c \gset
select conductor.create_schedule('every-min', '* * * * *', 'k1') as c \gset

-- the scheduler was down for 3.6 minutes (v0.2.0 fired 13 tasks here: the earliest
-- missed due time and the twelve within the minute of grace)
set local conductor.fake_now = '2030-01-01 00:03:36+00';
select results_eq($$select due_at from conductor.tick() where schedule_name = 'every-5s'$$,
  $$values ('2030-01-01 00:00:05+00'::timestamptz)$$,
  'Down for 3.6 minutes, a */5-second schedule fires once, for its earliest missed due time.');
select is((select count(*) from conductor.tasks where kind = 'k5'), 1::bigint,
  'Forty-three missed due times enqueued one task.');
select is((select next_due_at from conductor.schedules where name = 'every-5s'), '2030-01-01 00:03:40+00'::timestamptz,
  'It continues from the next future time.');
select is((select count(*) from conductor.tasks where kind = 'k1'), 1::bigint,
  'A per-minute schedule down through three minutes (one of them within grace) fires once too.');
select is((select next_due_at from conductor.schedules where name = 'every-min'), '2030-01-01 00:04:00+00'::timestamptz,
  'and continues at the next minute.');
select is_empty($$select * from conductor.tick()$$, 'Another tick at the same instant fires nothing.');

set local conductor.fake_now = '2030-01-01 00:03:40+00';
select results_eq($$select due_at from conductor.tick() where schedule_name = 'every-5s'$$,
  $$values ('2030-01-01 00:03:40+00'::timestamptz)$$,
  'At the next due time it fires as usual.');

-- a short grace: due times older than it were missed, even a few seconds' worth
set local conductor.fake_now = '2030-01-01 00:03:57+00';
select results_eq($$select due_at from conductor.tick(grace => interval '10 seconds') where schedule_name = 'every-5s'$$,
  $$values ('2030-01-01 00:03:45+00'::timestamptz)$$,
  'With a grace of 10 seconds, a tick 12 seconds late fires once (03:45) for 03:45, 03:50 and 03:55.');
select is((select next_due_at from conductor.schedules where name = 'every-5s'), '2030-01-01 00:04:00+00'::timestamptz,
  'and goes on from the next future time.');

select * from finish();
rollback;
