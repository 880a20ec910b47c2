-- enqueue raises QC106 for a run_at that is not finite or outside the years 1-9999 (stats()
-- and every driver would choke on it later), naming the value, and writes nothing.
begin;
select plan(8);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create temp table before_count as select count(*) as n from conductor.tasks;

select throws_ok($$select conductor.enqueue('k', run_at => '-infinity')$$, 'QC106',
  'invalid run_at -infinity: a time is finite, from 0001-01-02 to 9999-12-30 UTC',
  'run_at -infinity is refused with QC106, the message naming it.');
select throws_ok($$select conductor.enqueue('k', run_at => 'infinity')$$, 'QC106', NULL,
  'run_at infinity is refused with QC106.');
select throws_ok($$select conductor.enqueue('k', run_at => '10000-01-01 00:00:00+00')$$, 'QC106', NULL,
  'A run_at past the year 9999 is refused with QC106.');
select throws_ok($$select conductor.enqueue('k', run_at => '0044-03-15 12:00:00+00 BC')$$, 'QC106', NULL,
  'A run_at before the year 1 is refused with QC106.');
select lives_ok($$select conductor.enqueue('k', run_at => '1999-12-31 23:59:59+00')$$,
  'A run_at in the past is accepted (the task is due now).');
select lives_ok($$select conductor.enqueue('k', run_at => '9999-01-01 00:00:00+00')$$,
  'A run_at far in the future but within the range is accepted.');
select lives_ok($$select conductor.enqueue('k', run_at => null)$$, 'run_at NULL means now.');

select is((select count(*) from conductor.tasks) - (select n from before_count), 3::bigint,
  'Only the three valid tasks were written.');

select * from finish();
rollback;
