-- register_worker raises QC106 for a missing worker_id, concurrency below 1, or metadata not a JSON object,
-- QC101 for an empty kinds list or one holding NULL.
begin;
select plan(8);

select throws_ok($$select conductor.register_worker(NULL)$$, 'QC106', 'register_worker needs a worker_id',
  'A NULL worker_id is refused with QC106.');
select throws_ok($$select conductor.register_worker('')$$, 'QC106', 'register_worker needs a worker_id',
  'An empty worker_id is refused with QC106.');
select throws_ok($$select conductor.register_worker('w', concurrency => 0)$$, 'QC106', 'invalid concurrency 0: it must be 1 or more',
  'concurrency 0 is refused with QC106, the message naming it.');
select throws_ok($$select conductor.register_worker('w', metadata => '[]')$$, 'QC106', 'worker metadata must be a JSON object',
  'Array metadata is refused with QC106.');
select throws_ok($$select conductor.register_worker('w', metadata => NULL)$$, 'QC106', 'worker metadata must be a JSON object',
  'NULL metadata is refused with QC106.');
select throws_ok($$select conductor.register_worker('w', kinds => '{}')$$, 'QC101',
  'invalid kinds ''{}'': name at least one kind, or pass NULL for every kind',
  'An empty kinds array is refused with QC101 (NULL means every kind).');
select throws_ok($$select conductor.register_worker('w', kinds => array['a', NULL])$$, 'QC101', NULL,
  'A kinds array holding NULL is refused with QC101.');
select is((select count(*) from conductor.workers where id = 'w'), 0::bigint, 'No refused worker was recorded.');

select * from finish();
rollback;
