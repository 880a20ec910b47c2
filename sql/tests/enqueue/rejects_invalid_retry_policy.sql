-- enqueue raises QC106 for a retry policy that cannot work: max_attempts < 1, negative
-- max_recoveries, a backoff_base or backoff_max outside 0-30 days, a backoff_factor that
-- is not a number from 1 to 10, a backoff_base over backoff_max.
begin;
select plan(17);

create temp table before_count as select count(*) as n from conductor.tasks;

select throws_ok($$select conductor.enqueue('k', max_attempts => 0)$$, 'QC106', NULL,
  'max_attempts 0 is refused with QC106.');
select throws_ok($$select conductor.enqueue('k', max_attempts => 0)$$,
  'invalid retry policy for kind ''k'': max_attempts 0, it must be 1 or more',
  'The message names the kind and the bad max_attempts.');
select throws_ok($$select conductor.enqueue('k', max_recoveries => -1)$$, 'QC106', NULL,
  'A negative max_recoveries is refused with QC106.');
select throws_ok($$select conductor.enqueue('k', backoff_base => '-1 second')$$, 'QC106', NULL,
  'A negative backoff_base is refused with QC106.');
select throws_ok($$select conductor.enqueue('k', backoff_max => '-1 second')$$, 'QC106', NULL,
  'A negative backoff_max is refused with QC106.');
select throws_ok($$select conductor.enqueue('k', backoff_factor => 0.5)$$, 'QC106', NULL,
  'A backoff_factor below 1 is refused with QC106.');
select throws_ok($$select conductor.enqueue('k', backoff_factor => 'NaN')$$, 'QC106',
  'invalid retry policy for kind ''k'': backoff_factor NaN, it must be a number from 1 to 10',
  'A backoff_factor NaN is refused with QC106, the message naming it.');
select throws_ok($$select conductor.enqueue('k', backoff_factor => 'Infinity')$$, 'QC106', NULL,
  'An infinite backoff_factor is refused with QC106.');
select throws_ok($$select conductor.enqueue('k', backoff_factor => 10.5)$$, 'QC106', NULL,
  'A backoff_factor over 10 is refused with QC106.');
select throws_ok($$select conductor.enqueue('k', backoff_base => '1000000 years')$$, 'QC106',
  'invalid retry policy for kind ''k'': backoff_base 1000000 years, it must be from 0 to 30 days',
  'A backoff_base of a million years is refused with QC106, the message naming it.');
select throws_ok($$select conductor.enqueue('k', backoff_max => '31 days')$$, 'QC106', NULL,
  'A backoff_max over 30 days is refused with QC106.');
select throws_ok($$select conductor.enqueue('k', backoff_base => '2 hours', backoff_max => '1 hour')$$, 'QC106',
  'invalid retry policy for kind ''k'': backoff_base 02:00:00 is over backoff_max 01:00:00',
  'A backoff_base over backoff_max is refused with QC106.');
select lives_ok($$select conductor.enqueue('k', max_recoveries => 0)$$,
  'max_recoveries 0 (dead at the first lost worker) is accepted.');
select lives_ok($$select conductor.enqueue('k', backoff_base => '0', backoff_factor => 1, backoff_max => '0')$$,
  'A zero backoff with factor 1 is accepted.');
select lives_ok($$select conductor.enqueue('k', backoff_base => '30 days', backoff_factor => 10, backoff_max => '30 days')$$,
  'The largest policy, 30 days with factor 10, is accepted.');
select lives_ok($$select conductor.enqueue('k', backoff_base => '2 hours')$$,
  'A backoff_base over the default maximum is accepted (the maximum then caps it).');

select is((select count(*) from conductor.tasks) - (select n from before_count), 4::bigint,
  'Only the four valid policies were written.');

select * from finish();
rollback;
