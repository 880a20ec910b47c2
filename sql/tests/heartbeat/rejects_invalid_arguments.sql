-- heartbeat raises QC106 for a missing worker_id or a non-positive lease.
begin;
select plan(5);

select throws_ok($$select * from conductor.heartbeat(NULL, '{1}')$$, 'QC106', 'heartbeat needs a worker_id',
  'A NULL worker_id is refused with QC106.');
select throws_ok($$select * from conductor.heartbeat('', '{1}')$$, 'QC106', 'heartbeat needs a worker_id',
  'An empty worker_id is refused with QC106.');
select throws_ok($$select * from conductor.heartbeat('w1', '{1}', '0 seconds')$$, 'QC106', 'invalid lease 00:00:00: it must be positive',
  'A zero lease is refused with QC106, the message naming it.');
select throws_ok($$select * from conductor.heartbeat('w1', '{1}', NULL)$$, 'QC106', 'invalid lease NULL: it must be positive',
  'A NULL lease is refused with QC106.');
select is_empty($$select * from conductor.heartbeat('w1', '{}')$$,
  'A worker with no claims may still beat: an empty array answers nothing.');

select * from finish();
rollback;
