-- pgTAP: conductor.cron_next — lines that can never fire
begin;
select plan(3);

select throws_ok($$select conductor.cron_next('0 0 30 2 *', '2026-01-01Z')$$, 'QC301', null,
  '30 February never fires: cron_next raises QC301.');
select throws_ok($$select conductor.cron_validate('0 0 31 4,6,9,11 *')$$, 'QC301', null,
  'The 31st of 30-day months never fires: cron_validate raises QC301.');
select is(conductor.cron_next('0 0 30 2 MON', '2026-01-01Z'), '2026-02-02 00:00Z'::timestamptz,
  'With a restricted weekday (OR rule) a February line still fires on its weekdays.');

select * from finish();
rollback;
