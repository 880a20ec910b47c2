-- A worker's queues list takes enqueue's queue rule where it is stored or shown: sleep
-- (its marks) and next_due refuse a list naming a queue with a newline, U+202E or markup
-- (QC104), as register_worker does (register_worker/queues_take_the_queue_rule.sql).
-- claim's list is only a filter (a queue no task can be on finds nothing), and a worker
-- registers before it claims.
begin;
select plan(4);
create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;
select throws_ok($$select conductor.sleep('w-q', array['ok', E'a\u202eb'])$$, 'QC104', null,
  'sleep refuses a queues list naming a queue with U+202E.');
select throws_ok($$select * from conductor.next_due(queues => array['<b>q</b>'])$$, 'QC104', null,
  'next_due refuses a queues list naming a queue with markup.');
select throws_ok($$select * from conductor.next_due(queues => array[E'a\nb'])$$, 'QC104', null,
  'next_due refuses a queues list naming a queue with a newline.');
select lives_ok($$select conductor.sleep('w-q', array['default', 'a.b:c/d-e_9'])$$,
  'A list of valid queue names is slept on.');
reset role;
select * from finish();
rollback;
