-- pgTAP: conductor.cron_next — the five standard fields
begin;
select plan(5);

set local timezone = 'UTC';
select is(conductor.cron_next('0 0 * * *', '2026-01-01 12:00Z', 'UTC'), '2026-01-02 00:00Z'::timestamptz,
  'A daily line fires at the next midnight.');
select is(conductor.cron_next('* * * * *', '2026-01-01 12:00:30Z'), '2026-01-01 12:01Z'::timestamptz,
  'An every-minute line fires at the next whole minute, and the timezone defaults to UTC.');
select is(conductor.cron_next('5 4 * * *', '2026-01-01 04:05Z'), '2026-01-02 04:05Z'::timestamptz,
  'The due time is strictly after the given instant.');
select is(conductor.cron_next('30 6 15 8 *', '2026-09-01Z'), '2027-08-15 06:30Z'::timestamptz,
  'A yearly date already past this year fires next year.');
select is(conductor.cron_next('0 9 * * 1', '2026-01-01Z'), '2026-01-05 09:00Z'::timestamptz,
  'A weekday line fires on the next Monday (2026-01-01 is a Thursday).');

select * from finish();
rollback;
