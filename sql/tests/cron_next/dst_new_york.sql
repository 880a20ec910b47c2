-- pgTAP: conductor.cron_next — DST in America/New_York
begin;
select plan(7);

-- spring forward 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z); fall back 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z)
select is(conductor.cron_next('30 2 * * *', '2026-03-08 05:00Z', 'America/New_York'), '2026-03-08 07:00Z'::timestamptz,
  'A daily 02:30 that does not exist fires at 03:00 EDT, the first instant after the gap.');
select is(conductor.cron_next('30 2 * * *', '2026-03-08 07:00Z', 'America/New_York'), '2026-03-09 06:30Z'::timestamptz,
  'It fires once that day; the next day is back at 02:30 EDT.');
select is(conductor.cron_next('30 * * * *', '2026-03-08 06:30Z', 'America/New_York'), '2026-03-08 07:30Z'::timestamptz,
  'An hourly line skips the missing 02:30 and fires at 03:30 EDT.');
select is(conductor.cron_next('0 * * * *', '2026-11-01 05:00Z', 'America/New_York'), '2026-11-01 06:00Z'::timestamptz,
  'An hourly line fires at 01:00 EST after 01:00 EDT: every real hour.');
select is(conductor.cron_next('0 * * * *', '2026-11-01 05:30Z', 'America/New_York'), '2026-11-01 06:00Z'::timestamptz,
  'Half way through the first 01:xx the next hourly due time is the second 01:00.');
select is(conductor.cron_next('30 1 * * *', '2026-11-01 04:00Z', 'America/New_York'), '2026-11-01 05:30Z'::timestamptz,
  'A daily 01:30 fires at its first instant, 01:30 EDT.');
select is(conductor.cron_next('30 1 * * *', '2026-11-01 05:30Z', 'America/New_York'), '2026-11-02 06:30Z'::timestamptz,
  'A daily 01:30 does not fire again at 01:30 EST.');

select * from finish();
rollback;
