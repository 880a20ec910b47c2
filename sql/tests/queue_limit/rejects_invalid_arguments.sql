-- set_queue_limit validates as set_rate_limit does: a max_running outside 1-1000000 is
-- QC106 naming the value and the queue (0 would stop the queue: pause_queue's, an
-- admin's), an invalid queue name QC104 (enqueue's rule); nothing is written.
begin;
select plan(5);
\ir ../helpers.psql

select throws_ok($$select conductor.set_queue_limit('ql-bad', 0)$$, 'QC106',
  'invalid max_running 0 for queue ''ql-bad'': the most tasks of the queue running at once, 1 to 1000000',
  'A cap of 0 is refused (QC106), naming the value and the queue.');
select throws_ok($$select conductor.set_queue_limit('ql-bad', -1)$$, 'QC106', NULL, 'A negative cap is refused.');
select throws_ok($$select conductor.set_queue_limit('ql-bad', 1000001)$$, 'QC106', NULL, 'Over 1000000 is refused.');
select throws_ok($$select conductor.set_queue_limit('bad queue', 3)$$, 'QC104', NULL,
  'An invalid queue name is QC104, enqueue''s rule.');
select is((select count(*) from conductor.queue_limits where queue in ('ql-bad', 'bad queue')), 0::bigint,
  'Nothing was written.');

select * from finish();
rollback;
