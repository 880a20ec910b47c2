-- search_tasks refuses what it cannot search by, with a SQLSTATE and a message naming the value.
begin;
select plan(15);
\ir ../helpers.psql

select throws_ok($$select * from conductor.search_tasks(status => 'nope')$$, 'QC105',
  'unknown status ''nope'': one of queued, running, waiting, succeeded, failed, cancelled, timed_out, expired, dead',
  'An unknown status is QC105, naming it and the statuses.');
select throws_ok($$select * from conductor.search_tasks(kind => '')$$, 'QC106',
  'an empty kind matches no task: give the kind to look for, or NULL', 'An empty kind is QC106.');
select throws_ok($$select * from conductor.search_tasks(queue => '')$$, 'QC106',
  'an empty queue matches no task: give the queue to look for, or NULL', 'An empty queue is QC106.');
select throws_ok($$select * from conductor.search_tasks(dedupe_key => '')$$, 'QC106',
  'an empty dedupe_key matches no task: give the dedupe_key to look for, or NULL', 'An empty dedupe_key is QC106.');
select throws_ok($$select * from conductor.search_tasks(payload_contains => '[1]')$$, 'QC106',
  'invalid payload_contains [1]: a JSON object whose fields the payload must hold',
  'A payload_contains that is not an object is QC106, naming it.');
select throws_ok($$select * from conductor.search_tasks(enqueued_after => '2031-01-02', enqueued_before => '2031-01-01')$$,
  'QC106', NULL, 'An empty enqueued range is QC106.');
select throws_ok($$select * from conductor.search_tasks(finished_after => '2031-01-01', finished_before => '2031-01-01')$$,
  'QC106', NULL, 'An empty finished range is QC106.');
select throws_ok($$select * from conductor.search_tasks(enqueued_before => 'infinity')$$, 'QC106',
  'invalid enqueued_before infinity: a time is finite, from 0001-01-02 to 9999-12-30 UTC',
  'A time that is not finite is QC106, naming the parameter and the value.');
select throws_ok($$select * from conductor.search_tasks(finished_after => '9999-12-31 12:00:00+00')$$, 'QC106', NULL,
  'A time past 9999-12-30 UTC is QC106 (a bound widened by 5 minutes stays a time).');
select throws_ok($$select * from conductor.search_tasks(before_id => 0)$$, 'QC106',
  'invalid before_id 0: a task id (1 or more), or NULL for the newest', 'A before_id under 1 is QC106.');
select throws_ok($$select * from conductor.search_tasks("limit" => 0)$$, 'QC106',
  'invalid limit 0: between 1 and 1000', 'A limit of 0 is QC106.');
select throws_ok($$select * from conductor.search_tasks("limit" => 1001)$$, 'QC106',
  'invalid limit 1001: between 1 and 1000', 'A limit over 1000 is QC106.');
select throws_ok($$select * from conductor.search_tasks("limit" => null)$$, 'QC106',
  'invalid limit NULL: between 1 and 1000', 'A NULL limit is QC106.');
select throws_ok($$select * from conductor.search_tasks(scan_limit => 0)$$, 'QC106',
  'invalid scan_limit 0: between 1 and 1000000', 'A scan_limit of 0 is QC106.');
select throws_ok($$select * from conductor.search_tasks(scan_limit => 1000001)$$, 'QC106',
  'invalid scan_limit 1000001: between 1 and 1000000', 'A scan_limit over 1000000 is QC106.');

select * from finish();
rollback;
