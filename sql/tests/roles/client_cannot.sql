-- conductor_client cannot work tasks, run the worker's maintenance, prune, or act on tasks by filter.
begin;
select plan(15);

select conductor.enqueue(kind => 'k', queue => 'ro-cn') as t \gset
select attempt_id as a from conductor.claim('w-owner', array['ro-cn'], 1, interval '1 minute') \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;

select throws_ok($$select * from conductor.claim(worker_id => 'w', queues => array['ro-cn'], max_tasks => 1, lease => interval '1 minute')$$,
  '42501', null, 'A client cannot claim.');
select throws_ok(format('select conductor.complete(attempt_id => %s)', :a), '42501', null, 'A client cannot complete.');
select throws_ok(format('select * from conductor.complete_many(attempt_ids => array[%s]::bigint[])', :a), '42501', null,
  'A client cannot complete a batch.');
select throws_ok(format($$select conductor.fail(attempt_id => %s, error => 'x')$$, :a), '42501', null, 'A client cannot fail a task.');
select throws_ok(format($$select * from conductor.heartbeat(worker_id => 'w-owner', attempt_ids => array[%s]::bigint[], lease => interval '1 minute')$$, :a),
  '42501', null, 'A client cannot heartbeat.');
select throws_ok(format('select conductor.release(attempt_id => %s)', :a), '42501', null, 'A client cannot release.');
select throws_ok('select conductor.reap()', '42501', null, 'A client cannot reap.');
select throws_ok($$select conductor.set_queue_limit(queue => 'ro-cn', max_running => 1)$$, '42501', null,
  'A client cannot cap a queue.');
select throws_ok('select * from conductor.tick()', '42501', null, 'A client cannot tick.');
select throws_ok($$select conductor.register_worker(worker_id => 'w-client')$$, '42501', null, 'A client cannot register a worker.');
select throws_ok($$select conductor.prune(older_than => interval '1 day')$$, '42501', null, 'A client cannot prune.');
select throws_ok($$select conductor.try_lead(name => 'scheduler')$$, '42501', null, 'A client cannot take a leader lock.');
select throws_ok($$select * from conductor.preview_matching(action => 'cancel', queue => 'ro-cn')$$, '42501', null,
  'A client cannot preview a bulk action.');
select throws_ok($$select conductor.cancel_matching(queue => 'ro-cn')$$, '42501', null, 'A client cannot cancel by filter.');
select throws_ok($$select conductor.retry_matching(queue => 'ro-cn')$$, '42501', null, 'A client cannot retry by filter.');

reset role;
select * from finish();
rollback;
