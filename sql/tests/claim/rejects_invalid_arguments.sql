-- claim raises QC106 for a missing worker_id, a bad max_tasks or lease, QC104 for an empty queue list,
-- QC101 for an empty kinds list.
begin;
select plan(13);

select throws_ok($$select * from conductor.claim(NULL)$$, 'QC106', 'claim needs a worker_id',
  'A NULL worker_id is refused with QC106.');
select throws_ok($$select * from conductor.claim('')$$, 'QC106', 'claim needs a worker_id',
  'An empty worker_id is refused with QC106.');
select throws_ok($$select * from conductor.claim('w1', NULL, -1)$$, 'QC106', 'invalid max_tasks -1: it must be 0 or more',
  'A negative max_tasks is refused with QC106, the message naming it.');
select throws_ok($$select * from conductor.claim('w1', NULL, NULL)$$, 'QC106', 'invalid max_tasks NULL: it must be 0 or more',
  'A NULL max_tasks is refused with QC106.');
select throws_ok($$select * from conductor.claim('w1', NULL, 1, '0 seconds')$$, 'QC106', 'invalid lease 00:00:00: it must be positive',
  'A zero lease is refused with QC106, the message naming it.');
select throws_ok($$select * from conductor.claim('w1', NULL, 1, '-5 seconds')$$, 'QC106', NULL,
  'A negative lease is refused with QC106.');
select throws_ok($$select * from conductor.claim('w1', NULL, 1, NULL)$$, 'QC106', 'invalid lease NULL: it must be positive',
  'A NULL lease is refused with QC106.');
select throws_ok($$select * from conductor.claim('w1', '{}')$$, 'QC104',
  'invalid queues ''{}'': name at least one queue, or pass NULL for every queue',
  'An empty queues array is refused with QC104.');
select throws_ok($$select * from conductor.claim('w1', array['a', NULL])$$, 'QC104', NULL,
  'A queues array holding NULL is refused with QC104.');
select throws_ok($$select * from conductor.claim('w1', kinds => '{}')$$, 'QC101',
  'invalid kinds ''{}'': name at least one kind, or pass NULL for every kind',
  'An empty kinds array is refused with QC101: a worker without handlers claims nothing, by not claiming.');
select throws_ok($$select * from conductor.claim('w1', kinds => array['a', NULL])$$, 'QC101',
  'invalid kinds ''{a,NULL}'': name at least one kind, or pass NULL for every kind',
  'A kinds array holding NULL is refused with QC101.');
select throws_ok($$select * from conductor.claim('w1', NULL, 0, kinds => '{}')$$, 'QC101', NULL,
  'The kinds are checked even when max_tasks is 0.');
select lives_ok($$select * from conductor.claim('w1', NULL, 0)$$,
  'max_tasks 0 is valid.');

select * from finish();
rollback;
