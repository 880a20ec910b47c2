-- pgTAP: conductor.cron_next — invalid expressions raise QC301
begin;
select plan(15);

select throws_ok($$select conductor.cron_next('61 * * * *', '2026-01-01Z')$$, 'QC301',
  'invalid cron expression ''61 * * * *'': minute field ''61'' is out of range 0-59',
  'A minute of 61 is out of range, and the message names the field and value.');
select throws_ok($$select conductor.cron_validate('* 24 * * *')$$, 'QC301', null, 'An hour of 24 is out of range.');
select throws_ok($$select conductor.cron_validate('* * 0 * *')$$, 'QC301', null, 'A day-of-month of 0 is out of range.');
select throws_ok($$select conductor.cron_validate('* * * 13 *')$$, 'QC301', null, 'A month of 13 is out of range.');
select throws_ok($$select conductor.cron_validate('* * * * 8')$$, 'QC301', null, 'A weekday of 8 is out of range.');
select throws_ok($$select conductor.cron_validate('* * * *')$$, 'QC301', null, 'Four fields are too few.');
select throws_ok($$select conductor.cron_validate('* * * * * * *')$$, 'QC301', null, 'Seven fields are too many.');
select throws_ok($$select conductor.cron_validate('*/0 * * * *')$$, 'QC301', null, 'A step of 0 is refused.');
select throws_ok($$select conductor.cron_validate('5-1 * * * *')$$, 'QC301', null, 'A decreasing range is refused.');
select throws_ok($$select conductor.cron_validate('* * * FOO *')$$, 'QC301', null, 'An unknown month name is refused.');
select throws_ok($$select conductor.cron_validate('@reboot')$$, 'QC301', null, 'An unknown shorthand is refused.');
select throws_ok($$select conductor.cron_validate('1,,2 * * * *')$$, 'QC301', null, 'An empty list item is refused.');
select throws_ok($$select conductor.cron_next(null, '2026-01-01Z')$$, 'QC301', null, 'A null expression raises QC301.');
select is(conductor.cron_next('* * * * *', null), null, 'A null instant gives a null due time.');

select throws_ok($$select conductor.cron_validate(repeat('1 ', 60000))$$, 'QC301',
  'invalid cron expression ''' || repeat('1 ', 50) || '''…(120000 bytes): expected 5 fields (minute hour '
  'day-of-month month day-of-week) or 6 with a leading seconds field, got 60000',
  'A long expression is echoed cut to 100 characters and its size.');

select * from finish();
rollback;
