-- pgTAP: conductor.cron_next — lists, ranges and steps
begin;
select plan(6);

select is(conductor.cron_next('1,5 * * * *', '2026-01-01 12:02Z'), '2026-01-01 12:05Z'::timestamptz,
  'A list fires at its next member.');
select is(conductor.cron_next('10-12 * * * *', '2026-01-01 12:12Z'), '2026-01-01 13:10Z'::timestamptz,
  'A range past its end wraps to the next hour.');
select is(conductor.cron_next('*/15 * * * *', '2026-01-01 12:07Z'), '2026-01-01 12:15Z'::timestamptz,
  'A star step fires at multiples of the step.');
select is(conductor.cron_next('10-50/10 * * * *', '2026-01-01 12:50Z'), '2026-01-01 13:10Z'::timestamptz,
  'A range step stays inside its range.');
select is(conductor.cron_next('5/10 * * * *', '2026-01-01 12:06Z'), '2026-01-01 12:15Z'::timestamptz,
  'A start step (5/10) runs from the start to the end of the field.');
select is(conductor.cron_next('0 9-17/4 * * *', '2026-01-01 13:00Z'), '2026-01-01 17:00Z'::timestamptz,
  'Steps work in the hour field too.');

select * from finish();
rollback;
