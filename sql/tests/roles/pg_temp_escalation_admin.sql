-- As conductor_admin, the pg_temp escalation of issue 14 fails against every function
-- granted to the role (the worker's, and the operator's own: schedules, cancel, retry,
-- prune): with type-name domains planted in pg_temp (pg_temp_attack.psql), no call runs the attacker's code as the owner. The last test checks that this file
-- called every function conductor_admin may execute, so a new grant needs a line here.
begin;
select plan(43);
\ir ../helpers.psql

create role t_admin;
grant conductor_admin to t_admin;
\set attacker t_admin
\ir pg_temp_attack.psql

select isnt(conductor.version(), null, 'version() answers.');
select is(pg_temp.owner_runs(), 0::bigint, 'version() ran no pg_temp code as another role.');
select isnt(conductor.now(), null, 'now() answers.');
select is(pg_temp.owner_runs(), 0::bigint, 'now() ran no pg_temp code as another role.');

select conductor.register_worker(worker_id => 'esc-w', host => 'h', pid => 1, queues => array['esc'], concurrency => 4);
select is(pg_temp.owner_runs(), 0::bigint, 'register_worker ran no pg_temp code as the owner.');
select conductor.configure_kind(kind => 'esc.k', max_attempts => 3);
select is(pg_temp.owner_runs(), 0::bigint, 'configure_kind ran no pg_temp code as the owner.');
select conductor.enqueue(kind => 'esc.k', queue => 'esc') as t1 \gset
select is(pg_temp.owner_runs(), 0::bigint, 'enqueue ran no pg_temp code as the owner.');
select count(*) from conductor.enqueue_many('[{"kind": "esc.k", "queue": "esc"}, {"kind": "esc.k", "queue": "esc"},
  {"kind": "esc.k", "queue": "esc"}, {"kind": "esc.k", "queue": "esc"}]');
select is(pg_temp.owner_runs(), 0::bigint, 'enqueue_many ran no pg_temp code as the owner.');

select c.attempt_id as a1, c.task_id as t1 from conductor.claim(worker_id => 'esc-w', queues => array['esc'], max_tasks => 1, lease => interval '60 seconds') c \gset
select is(pg_temp.owner_runs(), 0::bigint, 'claim ran no pg_temp code as the owner.');
select c.attempt_id as a2 from conductor.claim(worker_id => 'esc-w', queues => array['esc'], max_tasks => 1, lease => interval '60 seconds') c \gset
select c.attempt_id as a3 from conductor.claim(worker_id => 'esc-w', queues => array['esc'], max_tasks => 1, lease => interval '60 seconds') c \gset
select c.attempt_id as a4 from conductor.claim(worker_id => 'esc-w', queues => array['esc'], max_tasks => 1, lease => interval '60 seconds') c \gset
select c.attempt_id as a5, c.task_id as t5 from conductor.claim(worker_id => 'esc-w', queues => array['esc'], max_tasks => 1, lease => interval '60 seconds') c \gset

select count(*) from conductor.heartbeat(worker_id => 'esc-w', attempt_ids => array[:a1, :a2, :a3, :a4, :a5]::bigint[], lease => interval '60 seconds');
select is(pg_temp.owner_runs(), 0::bigint, 'heartbeat ran no pg_temp code as the owner.');
select conductor.save_step(attempt_id => :a5, name => 'first', result => '{"x": 1}');
select is(pg_temp.owner_runs(), 0::bigint, 'save_step ran no pg_temp code as the owner.');
select conductor.spawn(attempt_id => :a5, step => 'child', kind => 'esc.k', queue => 'esc-child');
select is(pg_temp.owner_runs(), 0::bigint, 'spawn ran no pg_temp code as the owner.');
select count(*) from conductor.children(task_id => :t5);
select is(pg_temp.owner_runs(), 0::bigint, 'children ran no pg_temp code as the owner.');
select conductor.suspend(attempt_id => :a5, step => 'wait', wait_for => 'event', event => 'esc-event');
select is(pg_temp.owner_runs(), 0::bigint, 'suspend ran no pg_temp code as the owner.');
select conductor.emit_event(name => 'esc-event', payload => '{"n": 1}');
select is(pg_temp.owner_runs(), 0::bigint, 'emit_event ran no pg_temp code as the owner.');
select conductor.complete(attempt_id => :a1, result => '{"ok": true}');
select is(pg_temp.owner_runs(), 0::bigint, 'complete ran no pg_temp code as the owner.');
select count(*) from conductor.complete_many(attempt_ids => array[:a2]::bigint[], results => array['{"ok": true}']::pg_catalog.jsonb[]);
select is(pg_temp.owner_runs(), 0::bigint, 'complete_many ran no pg_temp code as the owner.');
select conductor.fail(attempt_id => :a3, error => 'boom', traceback => 'trace');
select is(pg_temp.owner_runs(), 0::bigint, 'fail ran no pg_temp code as the owner.');
select conductor.release(attempt_id => :a4);
select is(pg_temp.owner_runs(), 0::bigint, 'release ran no pg_temp code as the owner.');
select conductor.reap();
select is(pg_temp.owner_runs(), 0::bigint, 'reap ran no pg_temp code as the owner.');

select conductor.create_schedule(name => 'esc-s', cron => '* * * * *', kind => 'esc.k', queue => 'esc');
select is(pg_temp.owner_runs(), 0::bigint, 'create_schedule ran no pg_temp code as the owner.');
select conductor.tick();
select is(pg_temp.owner_runs(), 0::bigint, 'tick ran no pg_temp code as the owner.');
select conductor.next_wake();
select is(pg_temp.owner_runs(), 0::bigint, 'next_wake ran no pg_temp code as the owner.');
select count(*) from conductor.list_schedules();
select is(pg_temp.owner_runs(), 0::bigint, 'list_schedules ran no pg_temp code as the owner.');
select count(*) from conductor.get_task(task_id => :t1);
select is(pg_temp.owner_runs(), 0::bigint, 'get_task ran no pg_temp code as the owner.');
select count(*) from conductor.list_tasks(queue => 'esc');
select is(pg_temp.owner_runs(), 0::bigint, 'list_tasks ran no pg_temp code as the owner.');
select count(*) from conductor.stats();
select is(pg_temp.owner_runs(), 0::bigint, 'stats ran no pg_temp code as the owner.');
select conductor.try_lead(name => 'esc-lead');
select is(pg_temp.owner_runs(), 0::bigint, 'try_lead ran no pg_temp code as another role.');
select count(*) from conductor.leaders();
select is(pg_temp.owner_runs(), 0::bigint, 'leaders ran no pg_temp code as the owner.');
select conductor.lead_key(name => 'esc-lead');
select is(pg_temp.owner_runs(), 0::bigint, 'lead_key ran no pg_temp code as another role.');
select conductor.release_lead(name => 'esc-lead');
select is(pg_temp.owner_runs(), 0::bigint, 'release_lead ran no pg_temp code as another role.');
select isnt(conductor.cron_next(expr => '*/5 * * * *', after => conductor.now()), null,
  'cron_next answers for conductor_admin (it is granted; it must work as the role, not only as the owner).');
select is(pg_temp.owner_runs(), 0::bigint, 'cron_next ran no pg_temp code as another role.');
select lives_ok($$select conductor.cron_validate(expr => '*/5 * * * *')$$, 'cron_validate works for conductor_admin.');
select is(pg_temp.owner_runs(), 0::bigint, 'cron_validate ran no pg_temp code as another role.');
select conductor.update_schedule(name => 'esc-s', cron => '*/2 * * * *');
select is(pg_temp.owner_runs(), 0::bigint, 'update_schedule ran no pg_temp code as the owner.');
select conductor.enable_schedule(name => 'esc-s', enabled => false);
select is(pg_temp.owner_runs(), 0::bigint, 'enable_schedule ran no pg_temp code as the owner.');
select conductor.delete_schedule(name => 'esc-s');
select is(pg_temp.owner_runs(), 0::bigint, 'delete_schedule ran no pg_temp code as the owner.');
select conductor.enqueue(kind => 'esc.k', queue => 'esc-cancel') as t_cancel \gset
select conductor.cancel(task_id => :t_cancel);
select is(pg_temp.owner_runs(), 0::bigint, 'cancel ran no pg_temp code as the owner.');
select conductor.retry(task_id => :t_cancel);
select is(pg_temp.owner_runs(), 0::bigint, 'retry ran no pg_temp code as the owner.');
select conductor.prune(older_than => interval '0 seconds', include_failed => true);
select is(pg_temp.owner_runs(), 0::bigint, 'prune ran no pg_temp code as the owner.');
select conductor.deregister_worker(worker_id => 'esc-w');
select is(pg_temp.owner_runs(), 0::bigint, 'deregister_worker ran no pg_temp code as the owner.');

select set_eq(
  $$select distinct p.proname::pg_catalog.text from pg_catalog.pg_proc p
     where p.pronamespace = 'conductor'::regnamespace
       and pg_catalog.has_function_privilege('conductor_admin', p.oid, 'EXECUTE')$$,
  array['version', 'now', 'register_worker', 'configure_kind', 'enqueue', 'enqueue_many', 'claim', 'heartbeat',
        'save_step', 'spawn', 'children', 'suspend', 'emit_event', 'complete', 'complete_many', 'fail', 'release',
        'reap', 'create_schedule', 'tick', 'next_wake', 'list_schedules', 'get_task', 'list_tasks', 'stats',
        'try_lead', 'leaders', 'lead_key', 'release_lead', 'cron_next', 'cron_validate', 'deregister_worker',
        'update_schedule', 'enable_schedule', 'delete_schedule', 'cancel', 'retry', 'prune'],
  'This file calls every function granted to conductor_admin.');

reset role;
select * from finish();
rollback;
