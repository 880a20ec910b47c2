-- pgTAP: conductor.cron_next — L, the last day of the month
begin;
select plan(4);

select is(conductor.cron_next('0 0 L * *', '2026-01-31 12:00Z'), '2026-02-28 00:00Z'::timestamptz,
  'L is 28 February in a common year.');
select is(conductor.cron_next('0 0 L 2 *', '2027-03-01Z'), '2028-02-29 00:00Z'::timestamptz,
  'L is 29 February in a leap year.');
select is(conductor.cron_next('0 0 l * *', '2026-04-01Z'), '2026-04-30 00:00Z'::timestamptz,
  'L is case-insensitive and knows 30-day months.');
select is(conductor.cron_next('0 0 1,L * *', '2026-04-02Z'), '2026-04-30 00:00Z'::timestamptz,
  'L may stand in a list.');

select * from finish();
rollback;
