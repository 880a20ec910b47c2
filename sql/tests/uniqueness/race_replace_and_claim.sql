-- A replace (and a debounce reset) racing the holder's claim loses nothing: when the claim
-- locked the holder first, the replace waits, finds it running, and writes a new task with
-- its payload (the running one gives its key up); when the replace locked it first, the
-- claim skips it and takes it later with the new payload.
begin;
select plan(8);
\ir ../helpers.psql
create extension if not exists dblink;

select 'uniq-claim-' || pg_backend_pid() as q \gset
select dblink_connect('worker', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('client', conductor_tests.conninfo()) as c2 \gset
select pid as client_pid from dblink('client', 'select pg_backend_pid()') as r(pid int) \gset

-- 1. the claim first, then a debounce reset
-- (run_at in the past: due at once, whatever the clock)
select id as holder from dblink('client', format(
  'select conductor.enqueue(''k'', ''{"v": 1}'', %L, run_at => ''2000-01-01'', dedupe_key => %L, debounce => ''1 ms'')',
  :'q', :'q' || '-a')) as r(id bigint) \gset
select dblink_exec('worker', 'begin') as b1 \gset
select n as claimed from dblink('worker', format(
  'select count(*) from conductor.claim(''w'', array[%L], 1, ''60 s'')', :'q')) as r(n bigint) \gset
select is(:claimed::bigint, 1::bigint, 'The worker claims the holder (not yet committed).');
select dblink_send_query('client', format(
  'select conductor.enqueue(''k'', ''{"v": 2}'', %L, dedupe_key => %L, debounce => ''1 ms'')',
  :'q', :'q' || '-a')) as sent \gset
select ok(conductor_tests.await_lock_wait(:client_pid) and dblink_is_busy('client') = 1,
  'The debounce reset waits on the claimed row.');
select dblink_exec('worker', 'commit') as c1 \gset
select id as second from dblink_get_result('client') as r(id bigint) \gset
select * from dblink_get_result('client') as r(id bigint);
select isnt(:second::bigint, :holder::bigint, 'It then writes a new task');
select results_eq(
  format($$select * from dblink('worker', %L) as r(id bigint, s text, k text, p jsonb)$$,
         format('select id, status::text, dedupe_key, payload from conductor.tasks where queue = %L order by id', :'q')),
  format($$values (%s::bigint, 'running'::text, null::text, '{"v": 1}'::jsonb),
                  (%s::bigint, 'queued'::text, %L::text, '{"v": 2}'::jsonb)$$, :holder, :second, :'q' || '-a'),
  'carrying the last payload and the key; the started one runs on with the old payload.');

-- 2. the replace first, then the claim
select dblink_exec('client', 'begin') as b2 \gset
select id as replaced from dblink('client', format(
  'select conductor.enqueue(''k'', ''{"v": 3}'', %L, dedupe_key => %L, on_duplicate => ''replace'')',
  :'q', :'q' || '-a')) as r(id bigint) \gset
select is(:replaced::bigint, :second::bigint, 'A replace of the queued task holds its row (uncommitted)');
select is((select n from dblink('worker', format(
  'select count(*) from conductor.claim(''w'', array[%L], 1, ''60 s'')', :'q')) as r(n bigint)), 0::bigint,
  'and a claim skips it rather than wait.');
select dblink_exec('client', 'commit') as c2 \gset
select is((select p from dblink('worker', format(
  'select payload from conductor.claim(''w'', array[%L], 1, ''60 s'')', :'q')) as r(p jsonb)), '{"v": 3}'::jsonb,
  'After the commit it is claimed with the replaced payload.');
select is((select n from dblink('worker', format('select count(*) from conductor.tasks where queue = %L', :'q')) as r(n bigint)),
  2::bigint, 'Two tasks in all: no payload was lost, none ran twice.');

select dblink_exec('worker', format('delete from conductor.attempts where task_id in (select id from conductor.tasks where queue = %L)', :'q')) as d0 \gset
select dblink_exec('worker', format('delete from conductor.tasks where queue = %L', :'q')) as d \gset
select dblink_disconnect('worker') as x1 \gset
select dblink_disconnect('client') as x2 \gset

select * from finish();
rollback;
