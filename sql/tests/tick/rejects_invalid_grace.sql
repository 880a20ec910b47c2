-- tick raises QC106 for a grace that is NULL, negative or over 30 days (a grace of a
-- million years made it raise 22008 from the date arithmetic).
begin;
select plan(4);

select throws_ok($$select * from conductor.tick(grace => null)$$, 'QC106', NULL, 'A NULL grace is refused.');
select throws_ok($$select * from conductor.tick(grace => '-1 second')$$, 'QC106', NULL, 'A negative grace is refused.');
select throws_ok($$select * from conductor.tick(grace => '1000000 years')$$, 'QC106',
  'invalid grace 1000000 years: between 0 and 30 days',
  'A grace of a million years is refused with QC106, the message naming it.');
select lives_ok($$select * from conductor.tick(grace => '30 days')$$, 'A grace of 30 days is accepted.');

select * from finish();
rollback;
