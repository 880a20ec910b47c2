-- Around the spring-forward gap in Europe/Berlin (2030-03-31, 02:00 CET -> 03:00 CEST) a
-- '30 2 * * *' schedule fires at exactly the instants cron_next answers, once each, and
-- never at the wall time that does not exist.
begin;
select plan(8);
set local conductor.fake_now = '2030-03-29 12:00:00+00';

select conductor.create_schedule('berlin', '30 2 * * *', 'k', timezone => 'Europe/Berlin') as c \gset

-- the chain of due times, as cron_next answers it
select conductor.cron_next('30 2 * * *', '2030-03-29 12:00:00+00', 'Europe/Berlin') as d1 \gset
select conductor.cron_next('30 2 * * *', :'d1', 'Europe/Berlin') as d2 \gset
select conductor.cron_next('30 2 * * *', :'d2', 'Europe/Berlin') as d3 \gset

select is(:'d1'::timestamptz, '2030-03-30 01:30:00+00'::timestamptz,
  'Before the change, 02:30 CET is 01:30 UTC (a fixed point for the chain below).');
select is((select next_due_at from conductor.schedules where name = 'berlin'), :'d1'::timestamptz,
  'The schedule is first due at cron_next of the line after now.');

select set_config('conductor.fake_now', :'d1', true) as c \gset
select results_eq($$select due_at from conductor.tick()$$, format('values (%L::timestamptz)', :'d1'),
  'It fires at the first due time.');
select is((select next_due_at from conductor.schedules where name = 'berlin'), :'d2'::timestamptz,
  'Then it is due at cron_next of that due time, across the gap.');

select set_config('conductor.fake_now', (:'d2'::timestamptz - interval '1 microsecond')::text, true) as c \gset
select is_empty($$select * from conductor.tick()$$, 'Just before that instant nothing fires.');
select set_config('conductor.fake_now', :'d2', true) as c \gset
select results_eq($$select due_at from conductor.tick()$$, format('values (%L::timestamptz)', :'d2'),
  'On the day of the gap it fires once, at the instant cron_next gave.');
select is_empty($$select * from conductor.tick()$$, 'A second tick then fires nothing.');

select set_config('conductor.fake_now', :'d3', true) as c \gset
select results_eq($$select due_at from conductor.schedule_fires where schedule_name = 'berlin' union all
                    select due_at from conductor.tick() order by 1$$,
  format('values (%L::timestamptz), (%L), (%L)', :'d1', :'d2', :'d3'),
  'Over three days it fired three times, at the chain of cron_next instants.');

select * from finish();
rollback;
