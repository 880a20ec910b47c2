-- list_tasks raises QC105 for an unknown status and QC106 for a limit outside 0..10000.
begin;
select plan(5);

select throws_ok($$select * from conductor.list_tasks('bogus')$$, 'QC105',
  'unknown status ''bogus'': one of queued, running, waiting, succeeded, failed, cancelled, timed_out, expired, dead',
  'An unknown status is refused with QC105, the message naming it and the valid ones.');
select throws_ok($$select * from conductor.list_tasks('Queued')$$, 'QC105', NULL,
  'Statuses are lower-case words: ''Queued'' is refused with QC105.');
select throws_ok($$select * from conductor.list_tasks("limit" => -1)$$, 'QC106', 'invalid limit -1: between 0 and 10000',
  'A negative limit is refused with QC106.');
select throws_ok($$select * from conductor.list_tasks("limit" => 10001)$$, 'QC106', NULL,
  'A limit over 10000 is refused with QC106.');
select throws_ok($$select * from conductor.list_tasks("limit" => NULL)$$, 'QC106', NULL,
  'A NULL limit is refused with QC106.');

select * from finish();
rollback;
