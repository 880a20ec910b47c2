-- As conductor_worker, the pg_temp escalation of issue 14 fails against every function
-- granted to the role: with type-name domains planted in pg_temp (pg_temp_attack.psql),
-- no call runs the attacker's code as the owner. The last test checks that this file
-- called every function conductor_worker may execute, so a new grant needs a line here.
begin;
select plan(66);
\ir ../helpers.psql

create role t_worker;
grant conductor_worker to t_worker;
\set attacker t_worker
\ir pg_temp_attack.psql

\set granted conductor_worker
\ir pg_temp_worker_calls.psql

select conductor.deregister_worker(worker_id => 'esc-w');
select is(pg_temp.owner_runs(), 0::bigint, 'deregister_worker ran no pg_temp code as the owner.');

\ir pg_temp_graph_calls.psql
select conductor.complete(attempt_id => c.attempt_id, result => '{"n": 1}')
  from conductor.claim(worker_id => 'esc-w', queues => array['esc-graph'], max_tasks => 1, lease => interval '60 seconds') c;
select is((select status::text from conductor.tasks t join conductor.graph_edges e on e.task_id = t.id
            where e.dependency_id = :esc_graph_a), 'queued', 'A member''s end queued the member after it.');
select is(pg_temp.owner_runs(), 0::bigint, 'a graph member''s end (the trigger that queues what runs after it) ran no pg_temp code as the owner.');

select set_eq(
  $$select distinct p.proname::pg_catalog.text from pg_catalog.pg_proc p
     where p.pronamespace = 'conductor'::regnamespace
       and pg_catalog.has_function_privilege('conductor_worker', p.oid, 'EXECUTE')$$,
  array['enqueue_graph', 'graph', 'dependency_results', 'set_rate_limit', 'set_queue_limit', 'publish', 'subscribe', 'unsubscribe', 'exclusive', 'apply_retention', 'sample_queues', 'queue_series', 'save_log', 'overdue_schedules', 'version', 'now', 'unfinished_statuses', 'finished_statuses', 'retryable_statuses', 'register_worker', 'configure_kind', 'enqueue', 'enqueue_many', 'claim', 'heartbeat',
        'save_step', 'set_run_state', 'run_state', 'send_update', 'wait_update', 'reply_update', 'update_reply', 'spawn', 'children', 'suspend', 'emit_event', 'complete', 'complete_in_transaction', 'complete_many', 'fail', 'release',
        'reap', 'reap_report', 'create_schedule', 'tick', 'next_wake', 'next_due', 'list_schedules', 'get_task', 'list_attempts', 'run_timeline', 'list_tasks', 'search_tasks', 'stats',
        'unrunnable', 'why_waiting', 'waiting_reasons', 'sleep', 'wake', 'watch', 'unwatch',
        'try_lead', 'leaders', 'lead_key', 'release_lead', 'foreign_lock_holders', 'cron_next', 'cron_validate', 'deregister_worker'],
  'This file calls every function granted to conductor_worker.');

reset role;
select * from finish();
rollback;
