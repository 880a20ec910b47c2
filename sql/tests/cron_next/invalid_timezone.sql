-- pgTAP: conductor.cron_next — invalid timezones raise QC302
begin;
select plan(3);

select throws_ok($$select conductor.cron_next('* * * * *', '2026-01-01Z', 'Mars/Olympus_Mons')$$, 'QC302',
  'invalid timezone ''Mars/Olympus_Mons''', 'An unknown timezone raises QC302 naming it.');
select throws_ok($$select conductor.cron_next('* * * * *', '2026-01-01Z', null)$$, 'QC302', null,
  'A null timezone raises QC302.');
select is(conductor.cron_next('0 9 * * *', '2026-01-01Z', 'Australia/Sydney'), '2026-01-01 22:00Z'::timestamptz,
  'Fields are read in the wall clock of the timezone (09:00 AEDT is 22:00Z).');

select * from finish();
rollback;
