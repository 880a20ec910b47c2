-- An invalid cron line is refused with QC301 when the schedule is created, not later when
-- it would fire, and nothing is stored.
begin;
select plan(7);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select throws_ok($$select conductor.create_schedule('bad', '61 * * * *', 'k')$$, 'QC301', NULL,
  'A minute of 61 is refused with QC301 at creation.');
select throws_ok($$select conductor.create_schedule('bad', 'every day', 'k')$$, 'QC301', NULL,
  'Words that are not a cron line are refused with QC301.');
select throws_ok($$select conductor.create_schedule('bad', '* * * *', 'k')$$, 'QC301', NULL,
  'A line of four fields is refused with QC301.');
select throws_ok($$select conductor.create_schedule('bad', '0 0 30 2 *', 'k')$$, 'QC301', NULL,
  'A line that can never fire (February 30th) is refused with QC301.');
select throws_ok($$select conductor.create_schedule('bad', NULL, 'k')$$, 'QC301', NULL,
  'An SQL NULL line is refused with QC301.');
select is((select count(*) from conductor.schedules where name = 'bad'), 0::bigint,
  'No refused schedule was stored.');

select conductor.create_schedule('good', '0 * * * *', 'k') as c \gset
select throws_ok($$select conductor.update_schedule('good', cron => '0 25 * * *')$$, 'QC301', NULL,
  'update_schedule refuses an invalid line with QC301 too.');

select * from finish();
rollback;
