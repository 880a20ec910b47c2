-- As conductor_client, the pg_temp escalation of issue 14 fails against every function
-- granted to the role: with type-name domains planted in pg_temp (pg_temp_attack.psql),
-- no call runs the attacker's code as the owner (v0.1.0 ran it as a superuser through
-- enqueue). The last test checks that this file called every function granted to
-- conductor_client, so a new grant needs a line here.
begin;
select plan(36);
\ir ../helpers.psql

create role t_client;
grant conductor_client to t_client;
\set attacker t_client
\ir pg_temp_attack.psql

select conductor.version();
select conductor.now();
select is(pg_temp.owner_runs(), 0::bigint, 'version() and now() ran no pg_temp code as another role.');
select conductor.unfinished_statuses(), conductor.finished_statuses();
select is(pg_temp.owner_runs(), 0::bigint, 'unfinished_statuses() and finished_statuses() ran no pg_temp code as another role.');
select conductor.retryable_statuses();
select is(pg_temp.owner_runs(), 0::bigint, 'retryable_statuses() ran no pg_temp code as another role.');
select conductor.enqueue(kind => 'esc.k', queue => 'esc', payload => '{"a": 1}', run_at => conductor.now()) as t1 \gset
select is(pg_temp.owner_runs(), 0::bigint, 'enqueue ran no pg_temp code as the owner.');
select count(*) from conductor.enqueue_many('[{"kind": "esc.k", "queue": "esc"}]');
select is(pg_temp.owner_runs(), 0::bigint, 'enqueue_many ran no pg_temp code as the owner.');
select count(*) from conductor.get_task(task_id => :t1);
select is(pg_temp.owner_runs(), 0::bigint, 'get_task ran no pg_temp code as the owner.');
select count(*) from conductor.list_attempts(task_ids => array[:t1]::bigint[]);
select is(pg_temp.owner_runs(), 0::bigint, 'list_attempts ran no pg_temp code as the owner.');
select count(*) from conductor.run_timeline(run_task_id => :t1);
select is(pg_temp.owner_runs(), 0::bigint, 'run_timeline ran no pg_temp code as the owner.');
select count(*) from conductor.watch(task_id => :t1);
select conductor.unwatch(task_id => :t1);
select is(pg_temp.owner_runs(), 0::bigint, 'watch and unwatch ran no pg_temp code as the owner.');
select count(*) from conductor.list_tasks(queue => 'esc');
select is(pg_temp.owner_runs(), 0::bigint, 'list_tasks ran no pg_temp code as the owner.');
select count(*) from conductor.search_tasks(queue => 'esc', payload_contains => '{"a": 1}', enqueued_after => '2000-01-01', finished_before => '3000-01-01');
select is(pg_temp.owner_runs(), 0::bigint, 'search_tasks ran no pg_temp code as the owner.');
select count(*) from conductor.children(task_id => :t1);
select is(pg_temp.owner_runs(), 0::bigint, 'children ran no pg_temp code as the owner.');
select conductor.cancel(task_id => :t1);
select is(pg_temp.owner_runs(), 0::bigint, 'cancel ran no pg_temp code as the owner.');
-- the cancelled task has no steps: both refuse it (QC130) after their lookups ran as the owner
select throws_ok(format('select conductor.rewind(task_id => %s, from_step => ''none'')', :t1), 'QC130', null,
  'rewind runs for conductor_client (QC130: the task has no step none).');
select throws_ok(format('select conductor.fork(task_id => %s, from_step => ''none'')', :t1), 'QC130', null,
  'fork runs for conductor_client (QC130: the task has no step none).');
select is(pg_temp.owner_runs(), 0::bigint, 'rewind and fork ran no pg_temp code as the owner.');
select conductor.retry(task_id => :t1);
select is(pg_temp.owner_runs(), 0::bigint, 'retry ran no pg_temp code as the owner.');
select count(*) from conductor.run_state(task_id => :t1);
select is(pg_temp.owner_runs(), 0::bigint, 'run_state ran no pg_temp code as the owner.');
select conductor.send_update(task_id => :t1, name => 'esc', payload => '{"q": 1}') as esc_update \gset
select count(*) from conductor.update_reply(update_id => :esc_update);
select is(pg_temp.owner_runs(), 0::bigint, 'send_update and update_reply ran no pg_temp code as the owner.');
select conductor.emit_event(name => 'esc-event', payload => '{"n": 1}');
select is(pg_temp.owner_runs(), 0::bigint, 'emit_event ran no pg_temp code as the owner.');
select count(*) from conductor.stats();
select is(pg_temp.owner_runs(), 0::bigint, 'stats ran no pg_temp code as the owner.');
select count(*) from conductor.unrunnable();
select is(pg_temp.owner_runs(), 0::bigint, 'unrunnable ran no pg_temp code as the owner.');
select count(*) from conductor.why_waiting(task_ids => array(select id from conductor.tasks where status = 'queued'));
select count(*) from conductor.waiting_reasons();
select is(pg_temp.owner_runs(), 0::bigint, 'why_waiting and waiting_reasons ran no pg_temp code as the owner.');
select count(*) from conductor.queue_series(since => conductor.now() - interval '1 hour');
select is(pg_temp.owner_runs(), 0::bigint, 'queue_series ran no pg_temp code as the owner.');
select count(*) from conductor.overdue_schedules(grace => interval '1 minute');
select is(pg_temp.owner_runs(), 0::bigint, 'overdue_schedules ran no pg_temp code as the owner.');
select conductor.subscribe(topics => array['esc-topic']);
select conductor.publish(topic => 'esc-topic', payload => '{"n": 1}', origin => 'esc');
select conductor.unsubscribe(topics => array['esc-topic']);
select is(pg_temp.owner_runs(), 0::bigint, 'subscribe, publish and unsubscribe ran no pg_temp code as the owner.');
select conductor.exclusive(name => 'esc-lock');
select is(pg_temp.owner_runs(), 0::bigint, 'exclusive ran no pg_temp code as the owner.');
select count(*) from conductor.list_schedules();
select is(pg_temp.owner_runs(), 0::bigint, 'list_schedules ran no pg_temp code as the owner.');
select count(*) from conductor.leaders();
select is(pg_temp.owner_runs(), 0::bigint, 'leaders ran no pg_temp code as the owner.');
select conductor.lead_key(name => 'esc-lead');
select is(pg_temp.owner_runs(), 0::bigint, 'lead_key ran no pg_temp code as another role.');
select isnt(conductor.cron_next(expr => '*/5 * * * *', after => conductor.now(), timezone => 'Europe/Berlin'), null,
  'cron_next answers for conductor_client (it is granted; it must work as the role, not only as the owner).');
select lives_ok($$select conductor.cron_validate(expr => '*/5 * * * *')$$, 'cron_validate works for conductor_client.');
select is(pg_temp.owner_runs(), 0::bigint, 'cron_next and cron_validate ran no pg_temp code as another role.');

\ir pg_temp_graph_calls.psql
select conductor.cancel_graph(graph_id => :esc_graph);
select is(pg_temp.owner_runs(), 0::bigint, 'cancel_graph, and the ends of the members it cancels, ran no pg_temp code as the owner.');

select set_eq(
  $$select distinct p.proname::pg_catalog.text from pg_catalog.pg_proc p
     where p.pronamespace = 'conductor'::regnamespace
       and pg_catalog.has_function_privilege('conductor_client', p.oid, 'EXECUTE')$$,
  array['enqueue_graph', 'graph', 'dependency_results', 'cancel_graph', 'publish', 'subscribe', 'unsubscribe', 'exclusive', 'overdue_schedules', 'version', 'now', 'unfinished_statuses', 'finished_statuses', 'retryable_statuses', 'enqueue', 'enqueue_many', 'get_task', 'list_attempts', 'run_timeline', 'list_tasks', 'search_tasks', 'children', 'cancel', 'retry', 'rewind', 'fork', 'run_state', 'send_update', 'update_reply',
        'emit_event', 'stats', 'unrunnable', 'why_waiting', 'waiting_reasons', 'queue_series', 'list_schedules', 'leaders', 'lead_key', 'cron_next', 'cron_validate',
        'watch', 'unwatch'],
  'This file calls every function granted to conductor_client.');

reset role;
select * from finish();
rollback;
