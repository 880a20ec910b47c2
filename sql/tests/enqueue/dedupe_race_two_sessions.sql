-- Two sessions enqueue one dedupe_key at once. The second waits on the first's uncommitted
-- row (the unique index is the arbiter); when the first commits, the second returns the
-- first's id and writes nothing; when the first rolls back, the second writes its own task.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'dedupe-race-' || pg_backend_pid() as q \gset
select dblink_connect('first', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('second', conductor_tests.conninfo()) as c2 \gset
select pid as second_pid from dblink('second', 'select pg_backend_pid()') as r(pid int) \gset

-- 1. the first commits: the second gets its id
select dblink_exec('first', 'begin') as b1 \gset
select id as first_id from dblink('first', format('select conductor.enqueue(''k'', ''{"n": 1}'', %L, dedupe_key => %L)',
                                                   :'q', :'q' || '-a')) as r(id bigint) \gset
select dblink_send_query('second', format('select conductor.enqueue(''k'', ''{"n": 2}'', %L, dedupe_key => %L)',
                                          :'q', :'q' || '-a')) as sent \gset
select ok(conductor_tests.await_lock_wait(:second_pid) and dblink_is_busy('second') = 1,
  'The second enqueue waits on the first''s uncommitted holder.');
select dblink_exec('first', 'commit') as c1 \gset
select is((select id from dblink_get_result('second') as r(id bigint)), :first_id::bigint,
  'When the first commits, the second returns the first''s id.');
select * from dblink_get_result('second') as r(id bigint);
select is((select n from dblink('first', format('select count(*) from conductor.tasks where queue = %L', :'q')) as r(n bigint)),
  1::bigint, 'One task was written.');

-- 2. the first rolls back: the second writes its own
select dblink_exec('first', 'begin') as b2 \gset
select id as gone_id from dblink('first', format('select conductor.enqueue(''k'', ''{"n": 3}'', %L, dedupe_key => %L)',
                                                  :'q', :'q' || '-b')) as r(id bigint) \gset
select dblink_send_query('second', format('select conductor.enqueue(''k'', ''{"n": 4}'', %L, dedupe_key => %L)',
                                          :'q', :'q' || '-b')) as sent \gset
select ok(conductor_tests.await_lock_wait(:second_pid) and dblink_is_busy('second') = 1,
  'The second enqueue waits again.');
select dblink_exec('first', 'rollback') as r2 \gset
select id as second_id from dblink_get_result('second') as r(id bigint) \gset
select * from dblink_get_result('second') as r(id bigint);
select isnt(:second_id::bigint, :gone_id::bigint, 'After the rollback the second has a task of its own.');
select results_eq(
  format($$select * from dblink('first', %L) as r(p jsonb)$$,
         format('select payload from conductor.tasks where dedupe_key = %L', :'q' || '-b')),
  $$values ('{"n": 4}'::jsonb)$$,
  'It holds the second''s payload.');

select dblink_exec('first', format('delete from conductor.tasks where queue = %L', :'q')) as d \gset
select dblink_disconnect('first') as x1 \gset
select dblink_disconnect('second') as x2 \gset

select * from finish();
rollback;
