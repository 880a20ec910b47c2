-- prune() refuses a NULL or negative older_than, a NULL include_failed and a batch outside
-- 1..1000000 with QC106, deleting nothing.
begin;
select plan(6);

select throws_ok('select conductor.prune(null)', 'QC106', null, 'A NULL older_than is refused with QC106.');
select throws_ok($$select conductor.prune(interval '-1 day')$$, 'QC106', null, 'A negative older_than is refused with QC106.');
select throws_ok($$select conductor.prune(interval '1 day', include_failed => null)$$, 'QC106', null,
  'A NULL include_failed is refused with QC106.');
select throws_ok($$select conductor.prune(interval '1 day', batch => 0)$$, 'QC106', null, 'A batch of 0 is refused with QC106.');
select throws_ok($$select conductor.prune(interval '1 day', batch => null)$$, 'QC106', null, 'A NULL batch is refused with QC106.');
select throws_ok($$select conductor.prune(interval '1 day', batch => 1000001)$$, 'QC106', null,
  'A batch above 1000000 is refused with QC106.');

select * from finish();
rollback;
