-- enqueue_many raises QC106, naming the key, the task and the value, when a key holds a
-- value of the wrong type (a word for an integer, a malformed time or interval): these came
-- back as PostgreSQL's own 22P02/22007/22003. Nothing is written.
begin;
select plan(10);

create temp table before_count as select count(*) as n from conductor.tasks;

select throws_ok($$select conductor.enqueue_many('[{"kind": "k"}, {"kind": "k", "priority": "high"}]')$$, 'QC106',
  'invalid priority ''high'' in task #2 of the batch: it must be an integer',
  'A word for priority is refused with QC106, naming the key, the task and the value.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k", "priority": 1.5}]')$$, 'QC106', NULL,
  'A fraction for priority is refused with QC106.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k", "max_attempts": 99999999999}]')$$, 'QC106', NULL,
  'An integer out of range is refused with QC106.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k", "run_at": "next tuesday"}]')$$, 'QC106',
  'invalid run_at ''next tuesday'' in task #1 of the batch: it must be a timestamp with time zone',
  'A malformed run_at is refused with QC106.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k", "backoff_base": "abc"}]')$$, 'QC106',
  'invalid backoff_base ''abc'' in task #1 of the batch: it must be an interval',
  'A malformed interval is refused with QC106.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k", "timeout": "forever"}]')$$, 'QC106',
  'invalid timeout ''forever'' in task #1 of the batch: it must be an interval',
  'A malformed timeout is refused with QC106.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k", "backoff_factor": "fast"}]')$$, 'QC106', NULL,
  'A word for backoff_factor is refused with QC106.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k", "parent_id": true}]')$$, 'QC106', NULL,
  'A boolean for parent_id is refused with QC106.');
select lives_ok($$select conductor.enqueue_many('[{"kind": "k", "priority": "5", "backoff_base": "10 seconds", "run_at": "2030-01-01T00:00:00Z"}]')$$,
  'Values that convert (a number in a string, an interval and a time in ISO form) are accepted.');

select is((select count(*) from conductor.tasks) - (select n from before_count), 1::bigint,
  'Only the valid batch was written.');

select * from finish();
rollback;
