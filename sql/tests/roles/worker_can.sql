-- conductor_worker claims, heartbeats, completes, fails, releases, registers, reaps and
-- ticks, and samples the queues (the maintenance role's duty); it cannot prune or cancel.
begin;
select plan(17);

select conductor.enqueue(kind => 'k', queue => 'ro-w') as t1 \gset
select conductor.enqueue(kind => 'k', queue => 'ro-w') as t2 \gset
select conductor.enqueue(kind => 'k', queue => 'ro-w') as t3 \gset

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

select lives_ok($$select conductor.register_worker(worker_id => 'w-role')$$, 'A worker registers itself.');
select is((select count(*) from conductor.claim(worker_id => 'w-role', queues => array['ro-w'], max_tasks => 3, lease => interval '1 minute')),
  3::bigint, 'A worker claims tasks.');
select attempt_id as a1 from conductor.tasks where id = :t1 \gset
select attempt_id as a2 from conductor.tasks where id = :t2 \gset
select attempt_id as a3 from conductor.tasks where id = :t3 \gset
select is((select count(*) from conductor.heartbeat(worker_id => 'w-role', attempt_ids => array[:a1, :a2, :a3]::bigint[], lease => interval '1 minute')),
  0::bigint, 'A worker heartbeats its claims (nothing refused).');
select lives_ok(format('select conductor.complete(attempt_id => %s, result => %L)', :a1, '{"ok": true}'), 'A worker completes a task.');
select is(conductor.fail(attempt_id => :a2, error => 'boom')::text, 'failed', 'A worker fails a task.');
select lives_ok(format('select conductor.release(attempt_id => %s)', :a3), 'A worker releases a task.');
select lives_ok('select conductor.reap()', 'A worker reaps.');
select lives_ok('select * from conductor.tick()', 'A worker ticks the schedules.');
select lives_ok($$select conductor.try_lead(name => 'ro-lead')$$, 'A worker takes a leader lock.');
select lives_ok($$select conductor.release_lead(name => 'ro-lead')$$, 'A worker releases its leader lock.');
select lives_ok($$select conductor.enqueue(kind => 'k', queue => 'ro-w')$$, 'A worker enqueues (a handler starting more work).');
select lives_ok($$select conductor.deregister_worker(worker_id => 'w-role')$$, 'A worker deregisters itself.');
select is((select pg_catalog.cardinality(tasks) from conductor.search_tasks(queue => 'ro-w', kind => 'k')), 4,
  'A worker searches tasks.');
select lives_ok($$select conductor.sample_queues()$$, 'A worker samples the queues (the maintenance role).');
select lives_ok($$select conductor.set_queue_limit(queue => 'ro-w', max_running => 5)$$, 'A worker caps a queue of its own.');
select throws_ok($$select conductor.prune(older_than => interval '1 day')$$, '42501', null, 'A worker cannot prune.');
select throws_ok(format('select conductor.cancel(task_id => %s)', :t3), '42501', null, 'A worker cannot cancel a task.');

reset role;
select * from finish();
rollback;
