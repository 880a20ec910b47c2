-- Two sessions enqueue one key with a dedupe_window at once: the second waits on the first's
-- uncommitted task (the arbiter indexes), then returns its id; with on_duplicate replace it
-- gives that task its own payload. One task either way.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'uniq-race-' || pg_backend_pid() as q \gset
select dblink_connect('first', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('second', conductor_tests.conninfo()) as c2 \gset
select pid as second_pid from dblink('second', 'select pg_backend_pid()') as r(pid int) \gset

select dblink_exec('first', 'begin') as b1 \gset
select id as first_id from dblink('first', format(
  'select conductor.enqueue(''k'', ''{"n": 1}'', %L, dedupe_key => %L, dedupe_window => ''1 hour'')',
  :'q', :'q' || '-a')) as r(id bigint) \gset
select dblink_send_query('second', format(
  'select conductor.enqueue(''k'', ''{"n": 2}'', %L, dedupe_key => %L, dedupe_window => ''1 hour'', on_duplicate => ''replace'')',
  :'q', :'q' || '-a')) as sent \gset
select ok(conductor_tests.await_lock_wait(:second_pid) and dblink_is_busy('second') = 1,
  'The second enqueue waits on the first''s uncommitted task.');
select dblink_exec('first', 'commit') as c1 \gset
select is((select id from dblink_get_result('second') as r(id bigint)), :first_id::bigint,
  'When the first commits, the second returns its id.');
select * from dblink_get_result('second') as r(id bigint);
select results_eq(
  format($$select * from dblink('first', %L) as r(n bigint, p jsonb)$$,
         format('select count(*) over (), payload from conductor.tasks where queue = %L', :'q')),
  $$values (1::bigint, '{"n": 2}'::jsonb)$$,
  'One task was written, and the replace gave it the second''s payload.');

-- the same after the holder succeeded, within its period
select dblink_exec('first', format(
  'update conductor.tasks set status = ''succeeded'', finished_at = now() where queue = %L', :'q')) as u \gset
select dblink_exec('first', 'begin') as b2 \gset
select id as ignored from dblink('first', format(
  'select conductor.enqueue(''k'', ''{"n": 3}'', %L, dedupe_key => %L, dedupe_window => ''1 hour'')',
  :'q', :'q' || '-a')) as r(id bigint) \gset
select is(:ignored::bigint, :first_id::bigint, 'A succeeded holder of the period holds the key.');
select dblink_exec('first', 'commit') as c2 \gset
select is((select n from dblink('first', format('select count(*) from conductor.tasks where queue = %L', :'q')) as r(n bigint)),
  1::bigint, 'Still one task.');

select dblink_exec('first', format('delete from conductor.tasks where queue = %L', :'q')) as d \gset
select dblink_disconnect('first') as x1 \gset
select dblink_disconnect('second') as x2 \gset

select * from finish();
rollback;
