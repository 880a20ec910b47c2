-- cron_next answers within the engine's time range (conductor._time_range(): finite,
-- 0001-01-02 to 9999-12-30 UTC). An `after` outside it is refused with QC106 naming the
-- value (v0.2.0 raised a raw 0A000 for infinity and 22008 near the end of PostgreSQL's
-- range); when the line has no due time left by the end of the range, the answer is NULL
-- (v0.2.0 answered year 10000).
begin;
select plan(14);

select throws_ok($$select conductor.cron_next('* * * * *', 'infinity', 'UTC')$$, 'QC106',
  'invalid after ''infinity'': a time is finite, from 0001-01-02 to 9999-12-30 UTC',
  'after => infinity is refused with QC106 naming the value.');
select throws_ok($$select conductor.cron_next('* * * * *', '-infinity', 'UTC')$$, 'QC106', NULL,
  'after => -infinity too.');
select throws_ok($$select conductor.cron_next('* * * * *', '294276-12-31 00:00:00+00', 'UTC')$$, 'QC106', NULL,
  'A time near the end of PostgreSQL''s range (v0.2.0: a raw 22008) is refused with QC106.');
select throws_like($$select conductor.cron_next('0 0 * * *', '294276-12-31 00:00:00+00', 'Europe/Berlin')$$,
  'invalid after ''294276-12-31%',
  'The message names the value.');
select throws_ok($$select conductor.cron_next('* * * * *', '9999-12-31 00:00:00+00', 'UTC')$$, 'QC106', NULL,
  'A time past 9999-12-30 UTC is refused.');
select throws_ok($$select conductor.cron_next('* * * * *', '0001-01-01 00:00:00+00', 'UTC')$$, 'QC106', NULL,
  'So is one before 0001-01-02 UTC.');
select throws_ok($$select conductor.cron_next('* * * * *', '2000-01-01 BC', 'UTC')$$, 'QC106', NULL,
  'and one BC.');

select is(conductor.cron_next('0 0 1 1 *', '9999-06-01 00:00:00+00', 'UTC'), NULL,
  'A yearly line after June 9999 has no due time left in the range: NULL (v0.2.0: year 10000).');
select is(conductor.cron_next('* * * * *', '9999-12-29 23:59:30+00', 'UTC'), '9999-12-30 00:00:00+00'::timestamptz,
  'The end of the range itself is a due time.');
select is(conductor.cron_next('* * * * *', '9999-12-30 00:00:00+00', 'UTC'), NULL,
  'After the end of the range: NULL.');
select is(conductor.cron_next('0 0 * * *', '9999-12-29 12:00:00+00', 'Pacific/Pago_Pago'), NULL,
  'A local midnight on 9999-12-30 that is past the range in UTC (11:00Z) is no due time: NULL.');
select is(conductor.cron_next('0 0 * * *', '9999-12-29 00:00:00+00', 'Pacific/Kiritimati'),
  '9999-12-29 10:00:00+00'::timestamptz, 'One within the range in UTC is answered.');
select is(conductor.cron_next('* * * * *', '0001-01-02 00:00:00+00', 'UTC'), '0001-01-02 00:01:00+00'::timestamptz,
  'The start of the range is a valid after.');
select is(conductor.cron_next('* * * * *', null, 'UTC'), NULL, 'A NULL after still answers NULL.');

select * from finish();
rollback;
