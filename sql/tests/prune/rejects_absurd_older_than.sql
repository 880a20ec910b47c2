-- prune() refuses, with QC106 naming the value, an older_than whose cutoff (now - older_than)
-- would fall before 0001-01-02 UTC, however large (no overflow error); a cutoff after it is taken.
begin;
select plan(3);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select throws_ok($$select conductor.prune(interval '5000 years')$$, 'QC106',
  'invalid older_than 5000 years: the cutoff must be on or after 0001-01-02 UTC',
  'An older_than reaching back before the year 1 is refused with QC106, naming it.');
select throws_ok($$select conductor.prune(interval '178000000 years')$$, 'QC106',
  'invalid older_than 178000000 years: the cutoff must be on or after 0001-01-02 UTC',
  'The largest interval is refused with QC106, not an overflow error.');
select lives_ok($$select conductor.prune(interval '2000 years')$$, 'An older_than of 2000 years is taken.');

select * from finish();
rollback;
