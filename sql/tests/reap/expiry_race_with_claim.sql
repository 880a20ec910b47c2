-- A claim and a reaper meet on a task at its deadline to start: exactly one of them wins.
-- Each takes the row FOR UPDATE SKIP LOCKED and re-checks it: the one that holds it first
-- decides, the other skips it without waiting and, once the first commits, finds it gone.
-- Sessions are dblink connections; the tasks are committed and deleted again at the end.
begin;
select plan(7);
\ir ../helpers.psql
create extension if not exists dblink;

select 'exp-race-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('claimer', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('reaper', conductor_tests.conninfo()) as c3 \gset
select dblink_exec('stage', 'set conductor.fake_now = ''2030-01-01 00:00:00+00''') as s0 \gset
select dblink_exec('stage', format(
  'do $s$ begin perform conductor.enqueue(''k'', ''{}'', %L, expires_in => ''1 minute'') from generate_series(1, 2); end $s$',
  :'q')) as staged \gset
select min(id) as t1, max(id) as t2 from conductor.tasks where queue = :'q' \gset
-- the claimer's clock is a moment before the deadline, the reaper's at it
select dblink_exec('claimer', 'set conductor.fake_now = ''2030-01-01 00:00:59+00''') as s1 \gset
select dblink_exec('reaper', 'set conductor.fake_now = ''2030-01-01 00:01:00+00''') as s2 \gset
select dblink_exec('reaper', 'set lock_timeout = ''2s''') as s3 \gset
select dblink_exec('claimer', 'set lock_timeout = ''2s''') as s4 \gset

-- 1. the claim first: it holds the first task, uncommitted; the reaper skips it
select dblink_exec('claimer', 'begin') as b1 \gset
select is((select id from dblink('claimer', format('select task_id from conductor.claim(''w-exp'', array[%L], 1, ''1 minute'')', :'q'))
             as r(id bigint)), :t1::bigint,
  'The claimer starts the first task before its deadline (uncommitted).');
select is((select n from dblink('reaper', 'select tasks_expired from conductor.reap_report()') as r(n integer)), 1,
  'The reaper, at the deadline, skips the row the claimer holds and ends only the other task.');
select dblink_exec('claimer', 'commit') as c1 \gset
select is((select n from dblink('reaper', 'select tasks_expired from conductor.reap_report()') as r(n integer)), 0,
  'Once the claim committed, the reaper finds nothing: the started task never expires.');
select results_eq(format('select id, status::text from conductor.tasks where queue = %L order by id', :'q'),
  format($$values (%s::bigint, 'running'::text), (%s::bigint, 'expired'::text)$$, :t1, :t2),
  'Each task went one way: the first running, the second expired.');

-- 2. the reaper first: it holds a task it ends, uncommitted; a claim gets nothing, then or after
select dblink_exec('stage', format('do $s$ begin perform conductor.enqueue(''k'', ''{}'', %L, expires_in => ''1 minute''); end $s$', :'q')) as t3 \gset
select max(id) as t3 from conductor.tasks where queue = :'q' \gset
select dblink_exec('reaper', 'begin') as b2 \gset
select is((select n from dblink('reaper', 'select conductor._reap_expired()') as r(n integer)), 1,
  'The reaper ends the new task past its deadline (uncommitted).');
select format('select task_id from conductor.claim(%L, array[%L], 1, %L)', 'w-exp', :'q', '1 minute') as claim_sql \gset
select is_empty(format('select * from dblink(%L, %L) as r(id bigint)', 'claimer', :'claim_sql'),
  'A claim meeting the row the reaper holds skips it without waiting.');
select dblink_exec('reaper', 'commit') as c2 \gset
select results_eq(format($$select (select status::text from conductor.tasks where id = %s),
                                  (select count(*) from dblink('claimer', %L) as r(id bigint))$$,
                         :t3, :'claim_sql'),
  $$values ('expired'::text, 0::bigint)$$,
  'After the reaper committed, the task is expired and no claim starts it.');

select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', 'delete from conductor.workers where id = ''w-exp''') as d3 \gset
-- the committed reaps also took the unknown-kind sweep's turn at their fake time
select dblink_exec('stage', 'update conductor.maintenance set unknown_kinds_swept_at = null') as d4 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('claimer') as x2 \gset
select dblink_disconnect('reaper') as x3 \gset

select * from finish();
rollback;
