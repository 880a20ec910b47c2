-- pgTAP: conductor.cron_next — month and weekday names
begin;
select plan(5);

select is(conductor.cron_next('0 0 1 jan *', '2026-02-01Z'), '2027-01-01 00:00Z'::timestamptz,
  'Month names are accepted in lower case.');
select is(conductor.cron_next('0 0 * * MON-FRI', '2026-01-02 12:00Z'), '2026-01-05 00:00Z'::timestamptz,
  'A weekday range by name skips the weekend (2026-01-02 is a Friday).');
select is(conductor.cron_next('0 0 * * Sun', '2026-01-01Z'), '2026-01-04 00:00Z'::timestamptz,
  'Weekday names are case-insensitive.');
select is(conductor.cron_next('0 0 * * 7', '2026-01-01Z'), '2026-01-04 00:00Z'::timestamptz,
  'Weekday 7 is Sunday.');
select is(conductor.cron_next('0 0 * * 5-7', '2026-01-04 12:00Z'), '2026-01-09 00:00Z'::timestamptz,
  'A range ending at 7 covers Friday, Saturday and Sunday.');

select * from finish();
rollback;
