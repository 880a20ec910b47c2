-- sleep() records that a worker waits for work: one conductor.sleepers row per queue it names
-- (NULL: one row '*', every queue), replacing its earlier marks, while a queue it had marked
-- already keeps its row and its `since` (the mark is not rewritten on every idle round). It
-- answers true ("settled") when no enqueue into those queues is in flight, and creates a bare
-- workers row for a worker_id it does not know (as heartbeat does: reap may have forgotten
-- the worker, and sleepers rows need one). A bad list raises QC104, a missing worker_id
-- QC106, and neither writes anything.
-- Everything runs in this transaction and is rolled back. The every-queue mark is taken in a
-- savepoint rolled back at once: sleep's exclusive advisory lock on 'any queue' would
-- otherwise hold every other session's enqueue until this file ends.
begin;
select plan(13);
\ir ../helpers.psql

select 'sleep-marks-' || pg_backend_pid() as q \gset
select 'w-sleep-marks-' || pg_backend_pid() as w \gset

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select is(conductor.sleep(:'w', array[:'q' || '-a', :'q' || '-b', :'q' || '-a']), true,
  'sleep on queues nobody enqueues into is settled (true).');
select set_eq(format('select queue, since from conductor.sleepers where worker_id = %L', :'w'),
  format($$values (%L::text, '2030-01-01 00:00:00+00'::timestamptz), (%L, '2030-01-01 00:00:00+00')$$,
         :'q' || '-a', :'q' || '-b'),
  'One sleepers row per queue named (a queue named twice once), since now.');
select results_eq(format('select id, started_at, last_seen_at, queues from conductor.workers where id = %L', :'w'),
  format($$values (%L::text, '2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:00:00+00'::timestamptz, null::text[])$$, :'w'),
  'An unknown worker_id gets a bare workers row, seen now.');

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select is(conductor.sleep(:'w', array[:'q' || '-b', :'q' || '-c']), true,
  'A second sleep is settled too.');
select set_eq(format('select queue, since from conductor.sleepers where worker_id = %L', :'w'),
  format($$values (%L::text, '2030-01-01 00:00:00+00'::timestamptz), (%L, '2030-01-01 00:01:00+00')$$,
         :'q' || '-b', :'q' || '-c'),
  'It replaces the marks: a queue no longer named goes, a new one comes, one still named keeps its since.');
select results_eq(format('select last_seen_at from conductor.workers where id = %L', :'w'),
  $$values ('2030-01-01 00:00:00+00'::timestamptz)$$,
  'A known worker''s row is left as it is (sleep is no heartbeat).');

savepoint every_queue;
select conductor.sleep(:'w', null) as star_settled \gset
select string_agg(queue, ',') as star_marks from conductor.sleepers where worker_id = :'w' \gset
rollback to savepoint every_queue;
select is(:'star_marks'::text, '*', 'sleep with queues NULL leaves one row, queue ''*'' (every queue).');
select is_empty($$select 1 from pg_locks where pid = pg_backend_pid() and locktype = 'advisory'
                   and objid = 0 and mode = 'ExclusiveLock'$$,
  '(This file holds no lock on ''any queue'' after the savepoint''s rollback.)');

select throws_ok(format('select conductor.sleep(%L, array[]::text[])', :'w'), 'QC104', NULL,
  'An empty queue list raises QC104.');
select throws_ok(format('select conductor.sleep(%L, array[%L, null])', :'w', :'q' || '-a'), 'QC104', NULL,
  'A queue list holding NULL raises QC104.');
select throws_ok(format('select conductor.sleep(null, array[%L])', :'q' || '-a'), 'QC106', NULL,
  'A NULL worker_id raises QC106.');
select throws_ok(format('select conductor.sleep(%L, array[%L])', '', :'q' || '-a'), 'QC106', NULL,
  'An empty worker_id raises QC106.');
select set_eq(format('select queue from conductor.sleepers where worker_id = %L', :'w'),
  format('values (%L::text), (%L)', :'q' || '-b', :'q' || '-c'),
  'The refused calls left the marks as they were.');

select * from finish();
rollback;
