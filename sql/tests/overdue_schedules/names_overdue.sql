-- overdue_schedules, called as conductor_client (every role may), names the enabled
-- schedules whose next due time passed more than grace ago, most overdue first; a disabled
-- one or one within grace is not overdue; it refuses a NULL or negative grace with QC106.
begin;
select plan(6);

create role t_client;
grant conductor_client to t_client;

set local conductor.fake_now = '2030-01-01 00:00:30+00';
select conductor.create_schedule('od-minutely', '* * * * *', 'k') as c \gset
select conductor.create_schedule('od-hourly', '0 * * * *', 'k') as c \gset
select conductor.create_schedule('od-off', '* * * * *', 'k', enabled => false) as c \gset

set local role t_client;
set local conductor.fake_now = '2030-01-01 00:01:30+00';
select is_empty($$select * from conductor.overdue_schedules()$$,
  'Thirty seconds after a due time nothing is overdue (grace 1 minute).');
set local conductor.fake_now = '2030-01-01 01:02:00+00';
select results_eq($$select name, next_due_at, overdue from conductor.overdue_schedules()$$,
  $$values ('od-minutely'::text, '2030-01-01 00:01:00+00'::timestamptz, interval '1 hour 1 minute'),
           ('od-hourly'::text, '2030-01-01 01:00:00+00'::timestamptz, interval '2 minutes')$$,
  'Without ticks both enabled schedules are overdue, most overdue first; the disabled one is not.');
select results_eq($$select name from conductor.overdue_schedules(grace => interval '5 minutes')$$,
  $$values ('od-minutely'::text)$$, 'A grace of 5 minutes leaves out the one 2 minutes late.');
reset role;
select count(*) from conductor.tick() \gset
set local role t_client;
select is_empty($$select * from conductor.overdue_schedules()$$, 'After a tick nothing is overdue.');
select throws_ok($$select * from conductor.overdue_schedules(NULL)$$, 'QC106', 'invalid grace NULL: between 0 and 30 days',
  'A NULL grace is refused with QC106.');
select throws_ok($$select * from conductor.overdue_schedules('-1 second')$$, 'QC106', NULL, 'A negative grace is refused.');
reset role;

select * from finish();
rollback;
