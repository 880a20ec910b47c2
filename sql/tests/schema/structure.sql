-- Structure and privileges: the tables, the columns the contract names (DESIGN.md), the partial
-- indexes of the hot path, every public function with its signature, SECURITY DEFINER with an
-- empty search_path, and who may execute what.
begin;
select plan(173);

select has_table('conductor', 'tasks', 'conductor.tasks exists.');
select has_table('conductor', 'attempts', 'conductor.attempts exists.');
select has_table('conductor', 'workers', 'conductor.workers exists.');

-- DESIGN.md: conductor.tasks keeps at least these columns under these names.
select has_column('conductor', 'tasks', 'id', 'conductor.tasks has the column id.');
select has_column('conductor', 'tasks', 'kind', 'conductor.tasks has the column kind.');
select has_column('conductor', 'tasks', 'queue', 'conductor.tasks has the column queue.');
select has_column('conductor', 'tasks', 'status', 'conductor.tasks has the column status.');
select has_column('conductor', 'tasks', 'payload', 'conductor.tasks has the column payload.');
select has_column('conductor', 'tasks', 'result', 'conductor.tasks has the column result.');
select has_column('conductor', 'tasks', 'parent_id', 'conductor.tasks has the column parent_id.');
select has_column('conductor', 'tasks', 'root_id', 'conductor.tasks has the column root_id.');
select has_column('conductor', 'tasks', 'run_at', 'conductor.tasks has the column run_at.');
select has_column('conductor', 'tasks', 'attempt', 'conductor.tasks has the column attempt.');
select has_column('conductor', 'tasks', 'max_attempts', 'conductor.tasks has the column max_attempts.');
select has_column('conductor', 'tasks', 'recoveries', 'conductor.tasks has the column recoveries.');
select has_column('conductor', 'tasks', 'max_recoveries', 'conductor.tasks has the column max_recoveries.');
select has_column('conductor', 'tasks', 'dedupe_key', 'conductor.tasks has the column dedupe_key.');
select has_column('conductor', 'tasks', 'concurrency_key', 'conductor.tasks has the column concurrency_key.');
select has_column('conductor', 'attempts', 'id', 'conductor.attempts has the column id.');
select has_column('conductor', 'attempts', 'task_id', 'conductor.attempts has the column task_id.');
select has_column('conductor', 'attempts', 'worker_id', 'conductor.attempts has the column worker_id.');
select has_column('conductor', 'attempts', 'outcome', 'conductor.attempts has the column outcome.');
select has_column('conductor', 'attempts', 'error', 'conductor.attempts has the column error.');
select col_type_is('conductor', 'tasks', 'status', 'conductor.task_status', 'tasks.status is a conductor.task_status.');
select enum_has_labels('conductor', 'task_status',
  ARRAY['queued', 'running', 'waiting', 'succeeded', 'failed', 'cancelled', 'timed_out', 'expired', 'dead'],
  'The statuses are exactly the words of the contract, in lifecycle order.');

-- The hot path's indexes are partial over unfinished rows.
select has_index('conductor', 'tasks', 'tasks_ready_by_queue', 'conductor.tasks has the index tasks_ready_by_queue.');
select matches((select pg_get_expr(indpred, indrelid) from pg_index where indexrelid = 'conductor.tasks_ready_by_queue'::regclass),
  'status = ''queued''', 'The index tasks_ready_by_queue is partial (status = ''queued'').');
select has_index('conductor', 'tasks', 'tasks_ready', 'conductor.tasks has the index tasks_ready.');
select matches((select pg_get_expr(indpred, indrelid) from pg_index where indexrelid = 'conductor.tasks_ready'::regclass),
  'status = ''queued''', 'The index tasks_ready is partial (status = ''queued'').');
select has_index('conductor', 'tasks', 'tasks_running', 'conductor.tasks has the index tasks_running.');
select matches((select pg_get_expr(indpred, indrelid) from pg_index where indexrelid = 'conductor.tasks_running'::regclass),
  'status = ''running''', 'The index tasks_running is partial (status = ''running'').');
select has_index('conductor', 'tasks', 'tasks_dedupe_key', 'conductor.tasks has the index tasks_dedupe_key.');
select matches((select pg_get_expr(indpred, indrelid) from pg_index where indexrelid = 'conductor.tasks_dedupe_key'::regclass),
  'dedupe_key IS NOT NULL', 'The index tasks_dedupe_key is partial (dedupe_key IS NOT NULL).');
select has_index('conductor', 'tasks', 'tasks_children', 'conductor.tasks has the index tasks_children.');
select matches((select pg_get_expr(indpred, indrelid) from pg_index where indexrelid = 'conductor.tasks_children'::regclass),
  'parent_id IS NOT NULL', 'The index tasks_children is partial (parent_id IS NOT NULL).');
select has_index('conductor', 'tasks', 'tasks_run', 'conductor.tasks has the index tasks_run.');
select matches((select pg_get_expr(indpred, indrelid) from pg_index where indexrelid = 'conductor.tasks_run'::regclass),
  'parent_id IS NOT NULL', 'The index tasks_run is partial (parent_id IS NOT NULL).');
select index_is_unique('conductor', 'tasks', 'tasks_dedupe_key', 'tasks_dedupe_key is unique: one unfinished task per key.');

-- Every public function, with its signature.
select has_function('conductor', 'enqueue', ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'text', 'text', 'bigint', 'integer', 'interval', 'double precision', 'interval', 'interval', 'text', 'integer', 'interval', 'text[]', 'text', 'interval', 'interval', 'interval', 'text']::name[], 'conductor.enqueue(text, jsonb, text, integer, timestamp with time zone, integer, text, text, bigint, integer, interval, double precision, interval, interval, text, integer, interval, text[], text, interval, interval, interval, text) exists.');
select has_function('conductor', 'enqueue_many', ARRAY['jsonb']::name[], 'conductor.enqueue_many(jsonb) exists.');
select has_function('conductor', 'claim', ARRAY['text', 'text[]', 'integer', 'interval', 'text[]', 'boolean', 'text[]']::name[], 'conductor.claim(text, text[], integer, interval, text[], boolean, text[]) exists.');
select has_function('conductor', 'heartbeat', ARRAY['text', 'bigint[]', 'interval']::name[], 'conductor.heartbeat(text, bigint[], interval) exists.');
select has_function('conductor', 'complete', ARRAY['bigint', 'jsonb']::name[], 'conductor.complete(bigint, jsonb) exists.');
select has_function('conductor', 'complete_many', ARRAY['bigint[]', 'jsonb[]']::name[], 'conductor.complete_many(bigint[], jsonb[]) exists.');
select has_function('conductor', 'fail', ARRAY['bigint', 'text', 'timestamp with time zone', 'text', 'boolean', 'boolean', 'boolean']::name[], 'conductor.fail(bigint, text, timestamp with time zone, text, boolean, boolean, boolean) exists.');
select has_function('conductor', 'release', ARRAY['bigint']::name[], 'conductor.release(bigint) exists.');
select has_function('conductor', 'reap', ARRAY['interval']::name[], 'conductor.reap(interval) exists.');
select has_function('conductor', 'reap_report', ARRAY['interval']::name[], 'conductor.reap_report(interval) exists.');
select has_function('conductor', 'cancel', ARRAY['bigint']::name[], 'conductor.cancel(bigint) exists.');
select has_function('conductor', 'retry', ARRAY['bigint', 'boolean']::name[], 'conductor.retry(bigint, boolean) exists.');
select has_function('conductor', 'register_worker', ARRAY['text', 'text', 'integer', 'text[]', 'integer', 'text[]', 'text', 'jsonb', 'text[]']::name[], 'conductor.register_worker(text, text, integer, text[], integer, text[], text, jsonb, text[]) exists.');
select has_function('conductor', 'deregister_worker', ARRAY['text']::name[], 'conductor.deregister_worker(text) exists.');
select has_function('conductor', 'get_task', ARRAY['bigint']::name[], 'conductor.get_task(bigint) exists.');
select has_function('conductor', 'list_attempts', ARRAY['bigint[]']::name[], 'conductor.list_attempts(bigint[]) exists.');
select has_function('conductor', 'run_timeline', ARRAY['bigint', 'integer']::name[], 'conductor.run_timeline(bigint, integer) exists.');
select has_function('conductor', 'list_tasks', ARRAY['text', 'text', 'text', 'bigint', 'integer']::name[], 'conductor.list_tasks(text, text, text, bigint, integer) exists.');
select has_function('conductor', 'now', ARRAY[]::name[], 'conductor.now() exists.');

-- Security lives with the function: SECURITY DEFINER and search_path = pg_catalog, pg_temp.
select is_definer('conductor', 'enqueue', ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'text', 'text', 'bigint', 'integer', 'interval', 'double precision', 'interval', 'interval', 'text', 'integer', 'interval', 'text[]', 'text', 'interval', 'interval', 'interval', 'text']::name[], 'conductor.enqueue is SECURITY DEFINER.');
select is_definer('conductor', 'enqueue_many', ARRAY['jsonb']::name[], 'conductor.enqueue_many is SECURITY DEFINER.');
select is_definer('conductor', 'claim', ARRAY['text', 'text[]', 'integer', 'interval', 'text[]', 'boolean', 'text[]']::name[], 'conductor.claim is SECURITY DEFINER.');
select is_definer('conductor', 'heartbeat', ARRAY['text', 'bigint[]', 'interval']::name[], 'conductor.heartbeat is SECURITY DEFINER.');
select is_definer('conductor', 'complete', ARRAY['bigint', 'jsonb']::name[], 'conductor.complete is SECURITY DEFINER.');
select is_definer('conductor', 'complete_many', ARRAY['bigint[]', 'jsonb[]']::name[], 'conductor.complete_many is SECURITY DEFINER.');
select is_definer('conductor', 'fail', ARRAY['bigint', 'text', 'timestamp with time zone', 'text', 'boolean', 'boolean', 'boolean']::name[], 'conductor.fail is SECURITY DEFINER.');
select is_definer('conductor', 'release', ARRAY['bigint']::name[], 'conductor.release is SECURITY DEFINER.');
select is_definer('conductor', 'reap', ARRAY['interval']::name[], 'conductor.reap is SECURITY DEFINER.');
select is_definer('conductor', 'reap_report', ARRAY['interval']::name[], 'conductor.reap_report is SECURITY DEFINER.');
select is_definer('conductor', 'cancel', ARRAY['bigint']::name[], 'conductor.cancel is SECURITY DEFINER.');
select is_definer('conductor', 'retry', ARRAY['bigint', 'boolean']::name[], 'conductor.retry is SECURITY DEFINER.');
select is_definer('conductor', 'register_worker', ARRAY['text', 'text', 'integer', 'text[]', 'integer', 'text[]', 'text', 'jsonb', 'text[]']::name[], 'conductor.register_worker is SECURITY DEFINER.');
select is_definer('conductor', 'deregister_worker', ARRAY['text']::name[], 'conductor.deregister_worker is SECURITY DEFINER.');
select is_definer('conductor', 'get_task', ARRAY['bigint']::name[], 'conductor.get_task is SECURITY DEFINER.');
select is_definer('conductor', 'list_attempts', ARRAY['bigint[]']::name[], 'conductor.list_attempts is SECURITY DEFINER.');
select is_definer('conductor', 'run_timeline', ARRAY['bigint', 'integer']::name[], 'conductor.run_timeline is SECURITY DEFINER.');
select is_definer('conductor', 'list_tasks', ARRAY['text', 'text', 'text', 'bigint', 'integer']::name[], 'conductor.list_tasks is SECURITY DEFINER.');
select is_empty($$
  select p.oid::regprocedure from pg_proc p
   where p.pronamespace = 'conductor'::regnamespace
     and not coalesce(p.proconfig @> array['search_path=pg_catalog, pg_temp'], false)$$,
  'Every function of the schema (definer, trigger, helper) sets search_path = pg_catalog, pg_temp: '
  'an empty path would search the caller''s pg_temp first for type names.');

-- Grants: client enqueues, cancels, retries and reads; worker runs tasks; admin does all.
select function_privs_are('conductor', 'enqueue', ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'text', 'text', 'bigint', 'integer', 'interval', 'double precision', 'interval', 'interval', 'text', 'integer', 'interval', 'text[]', 'text', 'interval', 'interval', 'interval', 'text']::name[], 'conductor_client', ARRAY['EXECUTE'], 'conductor_client may execute conductor.enqueue.');
select function_privs_are('conductor', 'enqueue', ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'text', 'text', 'bigint', 'integer', 'interval', 'double precision', 'interval', 'interval', 'text', 'integer', 'interval', 'text[]', 'text', 'interval', 'interval', 'interval', 'text']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.enqueue.');
select function_privs_are('conductor', 'enqueue', ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'text', 'text', 'bigint', 'integer', 'interval', 'double precision', 'interval', 'interval', 'text', 'integer', 'interval', 'text[]', 'text', 'interval', 'interval', 'interval', 'text']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.enqueue.');
select ok(not has_function_privilege('public', 'conductor.enqueue(text, jsonb, text, integer, timestamp with time zone, integer, text, text, bigint, integer, interval, double precision, interval, interval, text, integer, interval, text[], text, interval, interval, interval, text)', 'execute'), 'PUBLIC may not execute conductor.enqueue.');
select function_privs_are('conductor', 'enqueue_many', ARRAY['jsonb']::name[], 'conductor_client', ARRAY['EXECUTE'], 'conductor_client may execute conductor.enqueue_many.');
select function_privs_are('conductor', 'enqueue_many', ARRAY['jsonb']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.enqueue_many.');
select function_privs_are('conductor', 'enqueue_many', ARRAY['jsonb']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.enqueue_many.');
select ok(not has_function_privilege('public', 'conductor.enqueue_many(jsonb)', 'execute'), 'PUBLIC may not execute conductor.enqueue_many.');
select function_privs_are('conductor', 'claim', ARRAY['text', 'text[]', 'integer', 'interval', 'text[]', 'boolean', 'text[]']::name[], 'conductor_client', ARRAY[]::text[], 'conductor_client may not execute conductor.claim.');
select function_privs_are('conductor', 'claim', ARRAY['text', 'text[]', 'integer', 'interval', 'text[]', 'boolean', 'text[]']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.claim.');
select function_privs_are('conductor', 'claim', ARRAY['text', 'text[]', 'integer', 'interval', 'text[]', 'boolean', 'text[]']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.claim.');
select ok(not has_function_privilege('public', 'conductor.claim(text, text[], integer, interval, text[], boolean, text[])', 'execute'), 'PUBLIC may not execute conductor.claim.');
select function_privs_are('conductor', 'heartbeat', ARRAY['text', 'bigint[]', 'interval']::name[], 'conductor_client', ARRAY[]::text[], 'conductor_client may not execute conductor.heartbeat.');
select function_privs_are('conductor', 'heartbeat', ARRAY['text', 'bigint[]', 'interval']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.heartbeat.');
select function_privs_are('conductor', 'heartbeat', ARRAY['text', 'bigint[]', 'interval']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.heartbeat.');
select ok(not has_function_privilege('public', 'conductor.heartbeat(text, bigint[], interval)', 'execute'), 'PUBLIC may not execute conductor.heartbeat.');
select function_privs_are('conductor', 'complete', ARRAY['bigint', 'jsonb']::name[], 'conductor_client', ARRAY[]::text[], 'conductor_client may not execute conductor.complete.');
select function_privs_are('conductor', 'complete', ARRAY['bigint', 'jsonb']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.complete.');
select function_privs_are('conductor', 'complete', ARRAY['bigint', 'jsonb']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.complete.');
select ok(not has_function_privilege('public', 'conductor.complete(bigint, jsonb)', 'execute'), 'PUBLIC may not execute conductor.complete.');
select function_privs_are('conductor', 'complete_many', ARRAY['bigint[]', 'jsonb[]']::name[], 'conductor_client', ARRAY[]::text[], 'conductor_client may not execute conductor.complete_many.');
select function_privs_are('conductor', 'complete_many', ARRAY['bigint[]', 'jsonb[]']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.complete_many.');
select function_privs_are('conductor', 'complete_many', ARRAY['bigint[]', 'jsonb[]']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.complete_many.');
select ok(not has_function_privilege('public', 'conductor.complete_many(bigint[], jsonb[])', 'execute'), 'PUBLIC may not execute conductor.complete_many.');
select function_privs_are('conductor', 'fail', ARRAY['bigint', 'text', 'timestamp with time zone', 'text', 'boolean', 'boolean', 'boolean']::name[], 'conductor_client', ARRAY[]::text[], 'conductor_client may not execute conductor.fail.');
select function_privs_are('conductor', 'fail', ARRAY['bigint', 'text', 'timestamp with time zone', 'text', 'boolean', 'boolean', 'boolean']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.fail.');
select function_privs_are('conductor', 'fail', ARRAY['bigint', 'text', 'timestamp with time zone', 'text', 'boolean', 'boolean', 'boolean']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.fail.');
select ok(not has_function_privilege('public', 'conductor.fail(bigint, text, timestamp with time zone, text, boolean, boolean, boolean)', 'execute'), 'PUBLIC may not execute conductor.fail.');
select function_privs_are('conductor', 'release', ARRAY['bigint']::name[], 'conductor_client', ARRAY[]::text[], 'conductor_client may not execute conductor.release.');
select function_privs_are('conductor', 'release', ARRAY['bigint']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.release.');
select function_privs_are('conductor', 'release', ARRAY['bigint']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.release.');
select ok(not has_function_privilege('public', 'conductor.release(bigint)', 'execute'), 'PUBLIC may not execute conductor.release.');
select function_privs_are('conductor', 'reap', ARRAY['interval']::name[], 'conductor_client', ARRAY[]::text[], 'conductor_client may not execute conductor.reap.');
select function_privs_are('conductor', 'reap', ARRAY['interval']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.reap.');
select function_privs_are('conductor', 'reap', ARRAY['interval']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.reap.');
select ok(not has_function_privilege('public', 'conductor.reap(interval)', 'execute'), 'PUBLIC may not execute conductor.reap.');
select function_privs_are('conductor', 'reap_report', ARRAY['interval']::name[], 'conductor_client', ARRAY[]::text[], 'conductor_client may not execute conductor.reap_report.');
select function_privs_are('conductor', 'reap_report', ARRAY['interval']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.reap_report.');
select function_privs_are('conductor', 'reap_report', ARRAY['interval']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.reap_report.');
select ok(not has_function_privilege('public', 'conductor.reap_report(interval)', 'execute'), 'PUBLIC may not execute conductor.reap_report.');
select function_privs_are('conductor', 'cancel', ARRAY['bigint']::name[], 'conductor_client', ARRAY['EXECUTE'], 'conductor_client may execute conductor.cancel.');
select function_privs_are('conductor', 'cancel', ARRAY['bigint']::name[], 'conductor_worker', ARRAY[]::text[], 'conductor_worker may not execute conductor.cancel.');
select function_privs_are('conductor', 'cancel', ARRAY['bigint']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.cancel.');
select ok(not has_function_privilege('public', 'conductor.cancel(bigint)', 'execute'), 'PUBLIC may not execute conductor.cancel.');
select function_privs_are('conductor', 'retry', ARRAY['bigint', 'boolean']::name[], 'conductor_client', ARRAY['EXECUTE'], 'conductor_client may execute conductor.retry.');
select function_privs_are('conductor', 'retry', ARRAY['bigint', 'boolean']::name[], 'conductor_worker', ARRAY[]::text[], 'conductor_worker may not execute conductor.retry.');
select function_privs_are('conductor', 'retry', ARRAY['bigint', 'boolean']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.retry.');
select ok(not has_function_privilege('public', 'conductor.retry(bigint, boolean)', 'execute'), 'PUBLIC may not execute conductor.retry.');
select function_privs_are('conductor', 'register_worker', ARRAY['text', 'text', 'integer', 'text[]', 'integer', 'text[]', 'text', 'jsonb', 'text[]']::name[], 'conductor_client', ARRAY[]::text[], 'conductor_client may not execute conductor.register_worker.');
select function_privs_are('conductor', 'register_worker', ARRAY['text', 'text', 'integer', 'text[]', 'integer', 'text[]', 'text', 'jsonb', 'text[]']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.register_worker.');
select function_privs_are('conductor', 'register_worker', ARRAY['text', 'text', 'integer', 'text[]', 'integer', 'text[]', 'text', 'jsonb', 'text[]']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.register_worker.');
select ok(not has_function_privilege('public', 'conductor.register_worker(text, text, integer, text[], integer, text[], text, jsonb, text[])', 'execute'), 'PUBLIC may not execute conductor.register_worker.');
select function_privs_are('conductor', 'deregister_worker', ARRAY['text']::name[], 'conductor_client', ARRAY[]::text[], 'conductor_client may not execute conductor.deregister_worker.');
select function_privs_are('conductor', 'deregister_worker', ARRAY['text']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.deregister_worker.');
select function_privs_are('conductor', 'deregister_worker', ARRAY['text']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.deregister_worker.');
select ok(not has_function_privilege('public', 'conductor.deregister_worker(text)', 'execute'), 'PUBLIC may not execute conductor.deregister_worker.');
select function_privs_are('conductor', 'get_task', ARRAY['bigint']::name[], 'conductor_client', ARRAY['EXECUTE'], 'conductor_client may execute conductor.get_task.');
select function_privs_are('conductor', 'get_task', ARRAY['bigint']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.get_task.');
select function_privs_are('conductor', 'get_task', ARRAY['bigint']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.get_task.');
select ok(not has_function_privilege('public', 'conductor.get_task(bigint)', 'execute'), 'PUBLIC may not execute conductor.get_task.');
select function_privs_are('conductor', 'list_attempts', ARRAY['bigint[]']::name[], 'conductor_client', ARRAY['EXECUTE'], 'conductor_client may execute conductor.list_attempts.');
select function_privs_are('conductor', 'list_attempts', ARRAY['bigint[]']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.list_attempts.');
select function_privs_are('conductor', 'list_attempts', ARRAY['bigint[]']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.list_attempts.');
select ok(not has_function_privilege('public', 'conductor.list_attempts(bigint[])', 'execute'), 'PUBLIC may not execute conductor.list_attempts.');
select function_privs_are('conductor', 'run_timeline', ARRAY['bigint', 'integer']::name[], 'conductor_client', ARRAY['EXECUTE'], 'conductor_client may execute conductor.run_timeline.');
select function_privs_are('conductor', 'run_timeline', ARRAY['bigint', 'integer']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.run_timeline.');
select function_privs_are('conductor', 'run_timeline', ARRAY['bigint', 'integer']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.run_timeline.');
select ok(not has_function_privilege('public', 'conductor.run_timeline(bigint, integer)', 'execute'), 'PUBLIC may not execute conductor.run_timeline.');
select function_privs_are('conductor', 'list_tasks', ARRAY['text', 'text', 'text', 'bigint', 'integer']::name[], 'conductor_client', ARRAY['EXECUTE'], 'conductor_client may execute conductor.list_tasks.');
select function_privs_are('conductor', 'list_tasks', ARRAY['text', 'text', 'text', 'bigint', 'integer']::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.list_tasks.');
select function_privs_are('conductor', 'list_tasks', ARRAY['text', 'text', 'text', 'bigint', 'integer']::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.list_tasks.');
select ok(not has_function_privilege('public', 'conductor.list_tasks(text, text, text, bigint, integer)', 'execute'), 'PUBLIC may not execute conductor.list_tasks.');
select function_privs_are('conductor', 'now', ARRAY[]::name[], 'conductor_client', ARRAY['EXECUTE'], 'conductor_client may execute conductor.now.');
select function_privs_are('conductor', 'now', ARRAY[]::name[], 'conductor_worker', ARRAY['EXECUTE'], 'conductor_worker may execute conductor.now.');
select function_privs_are('conductor', 'now', ARRAY[]::name[], 'conductor_admin', ARRAY['EXECUTE'], 'conductor_admin may execute conductor.now.');

-- Private helpers: granted to nobody.
select ok(not has_function_privilege('public', 'conductor._enqueue(conductor._task_spec[])', 'execute')
   and not has_function_privilege('conductor_client', 'conductor._enqueue(conductor._task_spec[])', 'execute')
   and not has_function_privilege('conductor_worker', 'conductor._enqueue(conductor._task_spec[])', 'execute')
   and not has_function_privilege('conductor_admin', 'conductor._enqueue(conductor._task_spec[])', 'execute'),
  'Neither PUBLIC nor any conductor role may execute the helper conductor._enqueue.');
select ok(not has_function_privilege('public', 'conductor._complete(bigint[], jsonb[])', 'execute')
   and not has_function_privilege('conductor_client', 'conductor._complete(bigint[], jsonb[])', 'execute')
   and not has_function_privilege('conductor_worker', 'conductor._complete(bigint[], jsonb[])', 'execute')
   and not has_function_privilege('conductor_admin', 'conductor._complete(bigint[], jsonb[])', 'execute'),
  'Neither PUBLIC nor any conductor role may execute the helper conductor._complete.');
select ok(not has_function_privilege('public', 'conductor._backoff(bigint, integer, interval, double precision, interval)', 'execute')
   and not has_function_privilege('conductor_client', 'conductor._backoff(bigint, integer, interval, double precision, interval)', 'execute')
   and not has_function_privilege('conductor_worker', 'conductor._backoff(bigint, integer, interval, double precision, interval)', 'execute')
   and not has_function_privilege('conductor_admin', 'conductor._backoff(bigint, integer, interval, double precision, interval)', 'execute'),
  'Neither PUBLIC nor any conductor role may execute the helper conductor._backoff.');
select ok(not has_function_privilege('public', 'conductor._refuse(bigint)', 'execute')
   and not has_function_privilege('conductor_client', 'conductor._refuse(bigint)', 'execute')
   and not has_function_privilege('conductor_worker', 'conductor._refuse(bigint)', 'execute')
   and not has_function_privilege('conductor_admin', 'conductor._refuse(bigint)', 'execute'),
  'Neither PUBLIC nor any conductor role may execute the helper conductor._refuse.');
select ok(not has_function_privilege('public', 'conductor._max_payload_bytes()', 'execute')
   and not has_function_privilege('conductor_client', 'conductor._max_payload_bytes()', 'execute')
   and not has_function_privilege('conductor_worker', 'conductor._max_payload_bytes()', 'execute')
   and not has_function_privilege('conductor_admin', 'conductor._max_payload_bytes()', 'execute'),
  'Neither PUBLIC nor any conductor role may execute the helper conductor._max_payload_bytes.');
select ok(not has_function_privilege('public', 'conductor._notify_queue(text)', 'execute')
   and not has_function_privilege('conductor_client', 'conductor._notify_queue(text)', 'execute')
   and not has_function_privilege('conductor_worker', 'conductor._notify_queue(text)', 'execute')
   and not has_function_privilege('conductor_admin', 'conductor._notify_queue(text)', 'execute'),
  'Neither PUBLIC nor any conductor role may execute the helper conductor._notify_queue.');
select ok(not has_function_privilege('public', 'conductor._notify_done(bigint[])', 'execute')
   and not has_function_privilege('conductor_client', 'conductor._notify_done(bigint[])', 'execute')
   and not has_function_privilege('conductor_worker', 'conductor._notify_done(bigint[])', 'execute')
   and not has_function_privilege('conductor_admin', 'conductor._notify_done(bigint[])', 'execute'),
  'Neither PUBLIC nor any conductor role may execute the helper conductor._notify_done.');
select ok(not has_function_privilege('public', 'conductor._spec_problem(conductor._task_spec, integer)', 'execute')
   and not has_function_privilege('conductor_client', 'conductor._spec_problem(conductor._task_spec, integer)', 'execute')
   and not has_function_privilege('conductor_worker', 'conductor._spec_problem(conductor._task_spec, integer)', 'execute')
   and not has_function_privilege('conductor_admin', 'conductor._spec_problem(conductor._task_spec, integer)', 'execute'),
  'Neither PUBLIC nor any conductor role may execute the helper conductor._spec_problem (the rule).');

-- The application roles read the tables and never write them directly.
select table_privs_are('conductor', 'tasks', 'conductor_client', ARRAY['SELECT'], 'conductor_client may only SELECT from conductor.tasks.');
select table_privs_are('conductor', 'tasks', 'conductor_worker', ARRAY['SELECT'], 'conductor_worker may only SELECT from conductor.tasks.');
select table_privs_are('conductor', 'tasks', 'conductor_admin', ARRAY['SELECT'], 'conductor_admin may only SELECT from conductor.tasks.');
select table_privs_are('conductor', 'attempts', 'conductor_client', ARRAY['SELECT'], 'conductor_client may only SELECT from conductor.attempts.');
select table_privs_are('conductor', 'attempts', 'conductor_worker', ARRAY['SELECT'], 'conductor_worker may only SELECT from conductor.attempts.');
select table_privs_are('conductor', 'attempts', 'conductor_admin', ARRAY['SELECT'], 'conductor_admin may only SELECT from conductor.attempts.');
select table_privs_are('conductor', 'workers', 'conductor_client', ARRAY['SELECT'], 'conductor_client may only SELECT from conductor.workers.');
select table_privs_are('conductor', 'workers', 'conductor_worker', ARRAY['SELECT'], 'conductor_worker may only SELECT from conductor.workers.');
select table_privs_are('conductor', 'workers', 'conductor_admin', ARRAY['SELECT'], 'conductor_admin may only SELECT from conductor.workers.');

-- Ownership: a NOLOGIN role that is not a superuser owns everything, so the SECURITY
-- DEFINER functions run with no power beyond the schema.
select ok((select not r.rolcanlogin and not r.rolsuper and not r.rolcreaterole and not r.rolcreatedb
                  and not r.rolbypassrls and not r.rolreplication
             from pg_roles r where r.rolname = 'conductor_owner'),
  'conductor_owner cannot log in and holds no superuser, createrole, createdb, replication or bypassrls.');
select is((select nspowner::regrole::text from pg_namespace where nspname = 'conductor'), 'conductor_owner',
  'conductor_owner owns the schema conductor.');
select is_empty($$
  select 'relation ' || c.oid::regclass::text from pg_class c
   where c.relnamespace = 'conductor'::regnamespace and c.relowner <> 'conductor_owner'::regrole
  union all
  select 'routine ' || p.oid::regprocedure::text from pg_proc p
   where p.pronamespace = 'conductor'::regnamespace and p.proowner <> 'conductor_owner'::regrole
  union all
  select 'type ' || t.oid::regtype::text from pg_type t
   where t.typnamespace = 'conductor'::regnamespace and t.typowner <> 'conductor_owner'::regrole$$,
  'conductor_owner owns every relation, routine and type of the schema.');

-- Configuration: one admin-only row; a fresh deploy has the fake clock off.
select col_default_is('conductor', 'settings', 'fake_clock', 'false', 'The fake clock is off by default.');
select is((select count(*) from conductor.settings), 1::bigint, 'conductor.settings holds exactly one row.');

select * from finish();
rollback;
