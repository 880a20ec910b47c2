-- pgTAP: conductor.cron_next — the @ shorthands
begin;
select plan(7);

select is(conductor.cron_next('@hourly', '2026-01-01 12:30Z'), '2026-01-01 13:00Z'::timestamptz, '@hourly fires at the next whole hour.');
select is(conductor.cron_next('@daily', '2026-01-01 12:30Z'), '2026-01-02 00:00Z'::timestamptz, '@daily fires at the next midnight.');
select is(conductor.cron_next('@midnight', '2026-01-01 12:30Z'), '2026-01-02 00:00Z'::timestamptz, '@midnight is @daily.');
select is(conductor.cron_next('@weekly', '2026-01-01 12:30Z'), '2026-01-04 00:00Z'::timestamptz, '@weekly fires at midnight on Sunday.');
select is(conductor.cron_next('@monthly', '2026-01-01 12:30Z'), '2026-02-01 00:00Z'::timestamptz, '@monthly fires at midnight on the 1st.');
select is(conductor.cron_next('@yearly', '2026-01-01 12:30Z'), '2027-01-01 00:00Z'::timestamptz, '@yearly fires at midnight on 1 January.');
select is(conductor.cron_next('@ANNUALLY', '2026-01-01 12:30Z'), '2027-01-01 00:00Z'::timestamptz, 'Shorthands are case-insensitive; @annually is @yearly.');

select * from finish();
rollback;
