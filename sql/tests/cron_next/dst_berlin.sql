-- pgTAP: conductor.cron_next — DST in Europe/Berlin
begin;
select plan(6);

-- spring forward 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z); fall back 2026-10-25 03:00 CEST -> 02:00 CET (01:00Z)
select is(conductor.cron_next('30 2 * * *', '2026-03-28 23:00Z', 'Europe/Berlin'), '2026-03-29 01:00Z'::timestamptz,
  'A daily 02:30 that does not exist fires at 03:00 CEST.');
select is(conductor.cron_next('*/20 2 * * *', '2026-03-28 23:00Z', 'Europe/Berlin'), '2026-03-29 01:00Z'::timestamptz,
  'All the missing 02:xx times of a line collapse into one firing at 03:00 CEST.');
select is(conductor.cron_next('*/20 2 * * *', '2026-03-29 01:00Z', 'Europe/Berlin'), '2026-03-30 00:00Z'::timestamptz,
  'After that single firing the line continues the next day.');
select is(conductor.cron_next('30 2 * * *', '2026-10-24 22:00Z', 'Europe/Berlin'), '2026-10-25 00:30Z'::timestamptz,
  'A daily 02:30 fires at its first instant, 02:30 CEST.');
select is(conductor.cron_next('30 2 * * *', '2026-10-25 00:30Z', 'Europe/Berlin'), '2026-10-26 01:30Z'::timestamptz,
  'It does not fire again at 02:30 CET.');
select is(conductor.cron_next('0 * * * *', '2026-10-25 00:00Z', 'Europe/Berlin'), '2026-10-25 01:00Z'::timestamptz,
  'An hourly line fires at 02:00 CET after 02:00 CEST.');

select * from finish();
rollback;
