-- queue_series refuses what makes no chart, with QC106 and a message naming the value.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2031-03-03 10:00:30+00';

select throws_ok($$select * from conductor.queue_series(since => null)$$, 'QC106',
  'invalid since NULL: the start of the range', 'A NULL since is refused.');
select throws_ok($$select * from conductor.queue_series(since => '-infinity')$$, 'QC106', null,
  'An infinite since is refused.');
select throws_ok($$select * from conductor.queue_series(since => conductor.now() - interval '1 hour', step => interval '30 seconds')$$,
  'QC106', 'invalid step 00:00:30: whole minutes, from 1 minute to 1 day', 'A step under a minute is refused.');
select throws_ok($$select * from conductor.queue_series(since => conductor.now() - interval '1 hour', step => interval '90 seconds')$$,
  'QC106', 'invalid step 00:01:30: whole minutes, from 1 minute to 1 day', 'A step of a minute and a half is refused.');
select throws_ok($$select * from conductor.queue_series(since => conductor.now() - interval '400 days', step => interval '1 month')$$,
  'QC106', 'invalid step 1 mon: whole minutes, from 1 minute to 1 day', 'A step of a month is refused.');
select throws_ok($$select * from conductor.queue_series(since => conductor.now(), until => conductor.now() - interval '1 hour')$$,
  'QC106', null, 'A since not before until is refused.');
select throws_ok($$select * from conductor.queue_series(since => conductor.now() - interval '2 days')$$,
  'QC106', null, 'Over 1440 points (two days by minute) is refused.');

select * from finish();
rollback;
