-- As conductor_admin, the pg_temp escalation of issue 14 fails against every function
-- granted to the role (the worker's, and the operator's own: schedules, cancel, retry,
-- prune): with type-name domains planted in pg_temp (pg_temp_attack.psql), no call runs
-- the attacker's code as the owner. The last test checks that this file called every
-- function conductor_admin may execute, so a new grant needs a line here.
begin;
select plan(77);
\ir ../helpers.psql

create role t_admin;
grant conductor_admin to t_admin;
\set attacker t_admin
\ir pg_temp_attack.psql

\set granted conductor_admin
\ir pg_temp_worker_calls.psql

select conductor.update_schedule(name => 'esc-s', cron => '*/2 * * * *');
select is(pg_temp.owner_runs(), 0::bigint, 'update_schedule ran no pg_temp code as the owner.');
select conductor.enable_schedule(name => 'esc-s', enabled => false);
select is(pg_temp.owner_runs(), 0::bigint, 'enable_schedule ran no pg_temp code as the owner.');
select conductor.fire_schedule(name => 'esc-s');
select is(pg_temp.owner_runs(), 0::bigint, 'fire_schedule ran no pg_temp code as the owner.');
select conductor.pause_queue(queue => 'esc-paused');
select conductor.resume_queue(queue => 'esc-paused');
select is(pg_temp.owner_runs(), 0::bigint, 'pause_queue and resume_queue ran no pg_temp code as the owner.');
select conductor.delete_schedule(name => 'esc-s');
select is(pg_temp.owner_runs(), 0::bigint, 'delete_schedule ran no pg_temp code as the owner.');
select conductor.enqueue(kind => 'esc.k', queue => 'esc-cancel') as t_cancel \gset
select conductor.cancel(task_id => :t_cancel);
select is(pg_temp.owner_runs(), 0::bigint, 'cancel ran no pg_temp code as the owner.');
select conductor.retry(task_id => :t_cancel);
select is(pg_temp.owner_runs(), 0::bigint, 'retry ran no pg_temp code as the owner.');
select * from conductor.preview_matching(action => 'cancel', queue => 'esc-cancel');
select is(pg_temp.owner_runs(), 0::bigint, 'preview_matching ran no pg_temp code as the owner.');
select conductor.cancel_matching(queue => 'esc-cancel', error_contains => 'x', enqueued_after => conductor.now() - interval '1 day');
select is(pg_temp.owner_runs(), 0::bigint, 'cancel_matching ran no pg_temp code as the owner.');
select conductor.retry_matching(queue => 'esc-cancel', error_contains => 'x', finished_before => conductor.now(), expected => 5, batch => 10);
select is(pg_temp.owner_runs(), 0::bigint, 'retry_matching ran no pg_temp code as the owner.');
select conductor.cancel(task_id => :t5);
select conductor.fork(task_id => :t5, from_step => 'child');
select conductor.rewind(task_id => :t5, from_step => 'child');
select is(pg_temp.owner_runs(), 0::bigint, 'fork and rewind ran no pg_temp code as the owner.');
select conductor.prune(older_than => interval '0 seconds', include_failed => true);
select is(pg_temp.owner_runs(), 0::bigint, 'prune ran no pg_temp code as the owner.');
select conductor.deregister_worker(worker_id => 'esc-w');
select is(pg_temp.owner_runs(), 0::bigint, 'deregister_worker ran no pg_temp code as the owner.');

\ir pg_temp_graph_calls.psql
select conductor.cancel_graph(graph_id => :esc_graph);
select is(pg_temp.owner_runs(), 0::bigint, 'cancel_graph, and the ends of the members it cancels, ran no pg_temp code as the owner.');

select set_eq(
  $$select distinct p.proname::pg_catalog.text from pg_catalog.pg_proc p
     where p.pronamespace = 'conductor'::regnamespace
       and pg_catalog.has_function_privilege('conductor_admin', p.oid, 'EXECUTE')$$,
  array['enqueue_graph', 'graph', 'dependency_results', 'cancel_graph', 'pause_queue', 'resume_queue', 'set_rate_limit', 'set_queue_limit', 'publish', 'subscribe', 'unsubscribe', 'exclusive', 'apply_retention', 'sample_queues', 'queue_series', 'save_log', 'overdue_schedules', 'fire_schedule', 'version', 'now', 'unfinished_statuses', 'finished_statuses', 'retryable_statuses', 'register_worker', 'configure_kind', 'enqueue', 'enqueue_many', 'claim', 'heartbeat',
        'save_step', 'set_run_state', 'run_state', 'send_update', 'wait_update', 'reply_update', 'update_reply', 'spawn', 'children', 'suspend', 'emit_event', 'complete', 'complete_in_transaction', 'complete_many', 'fail', 'release',
        'reap', 'reap_report', 'create_schedule', 'tick', 'next_wake', 'next_due', 'list_schedules', 'get_task', 'list_attempts', 'run_timeline', 'list_tasks', 'search_tasks', 'stats',
        'unrunnable', 'why_waiting', 'waiting_reasons', 'sleep', 'wake', 'watch', 'unwatch',
        'try_lead', 'leaders', 'lead_key', 'release_lead', 'foreign_lock_holders', 'cron_next', 'cron_validate', 'deregister_worker',
        'update_schedule', 'enable_schedule', 'delete_schedule', 'cancel', 'retry', 'rewind', 'fork', 'prune', 'preview_matching', 'retry_matching', 'cancel_matching'],
  'This file calls every function granted to conductor_admin.');

reset role;
select * from finish();
rollback;
