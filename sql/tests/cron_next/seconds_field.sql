-- pgTAP: conductor.cron_next — a leading seconds field
begin;
select plan(3);

select is(conductor.cron_next('*/10 * * * * *', '2026-01-01 12:00:05Z'), '2026-01-01 12:00:10Z'::timestamptz,
  'Six fields: the first is seconds.');
select is(conductor.cron_next('30 0 12 * * *', '2026-01-01 12:00:30Z'), '2026-01-02 12:00:30Z'::timestamptz,
  'A seconds line is also strictly after the given instant.');
select is(conductor.cron_next('0 * * * *', '2026-01-01 12:00:00.5Z'), '2026-01-01 13:00Z'::timestamptz,
  'Five fields fire at second 0; fractions of a second count as after.');

select * from finish();
rollback;
