-- pgTAP: conductor.cron_next — day-of-month and day-of-week combined as in Vixie cron
begin;
select plan(4);

select is(conductor.cron_next('0 0 13 * 5', '2026-01-01Z'), '2026-01-02 00:00Z'::timestamptz,
  'Both fields restricted: a day matches if either does (Friday 2 January comes before the 13th).');
select is(conductor.cron_next('0 0 13 * 5', '2026-01-10Z'), '2026-01-13 00:00Z'::timestamptz,
  'Both fields restricted: the 13th fires though it is a Tuesday.');
select is(conductor.cron_next('0 0 */13 * 5', '2026-01-01Z'), '2026-02-27 00:00Z'::timestamptz,
  'A day-of-month starting with * makes both fields required: a Friday that is 1, 14 or 27.');
select is(conductor.cron_next('0 0 13 * *', '2026-01-01Z'), '2026-01-13 00:00Z'::timestamptz,
  'An unrestricted weekday leaves the day-of-month alone.');

select * from finish();
rollback;
