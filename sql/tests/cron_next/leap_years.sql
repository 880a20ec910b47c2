-- pgTAP: conductor.cron_next — leap years
begin;
select plan(3);

select is(conductor.cron_next('0 0 29 2 *', '2025-01-01Z'), '2028-02-29 00:00Z'::timestamptz,
  '29 February fires in the next leap year.');
select is(conductor.cron_next('0 0 29 2 *', '2096-03-01Z'), '2104-02-29 00:00Z'::timestamptz,
  '2100 is not a leap year.');
select is(conductor.cron_next('0 0 29 2 *', '1999-03-01Z'), '2000-02-29 00:00Z'::timestamptz,
  '2000 is a leap year.');

select * from finish();
rollback;
