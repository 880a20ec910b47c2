-- claim(durable => false) commits without waiting for its WAL flush: it sets
-- synchronous_commit off for the rest of its transaction, but only when that
-- transaction has written nothing before the claim (earlier writes keep the
-- durability the caller chose). By default a claim changes nothing. Two claims
-- that both find conductor.claim_epoch empty (after a crash) move the
-- attempt-id sequence once: the second waits for the first's row and goes on
-- past the move. Sessions are dblink connections, the tasks committed through
-- one of them and deleted at the end.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'durable-q-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('a', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('b', conductor_tests.conninfo()) as c3 \gset
select dblink_exec('stage', format(
  'do $s$ begin perform conductor.enqueue(''k'', ''{}'', %L) from generate_series(1, 6); end $s$', :'q')) as staged \gset

create function pg_temp.claim_setting(conn text, q text, durable boolean, write_first boolean) returns text
  language plpgsql as $$
declare
  v text;
begin
  perform dblink_exec(conn, 'begin');
  if write_first then
    perform dblink_exec(conn, 'create temp table if not exists scratch (x int); insert into scratch values (1)');
  end if;
  perform * from dblink(conn, format('select count(*) from conductor.claim(%L, array[%L], 1, durable => %L)',
                                     conn, q, durable)) as c(n bigint);
  select s into v from dblink(conn, 'select current_setting(''synchronous_commit'')') as r(s text);
  perform dblink_exec(conn, 'commit');
  return v;
end
$$;

select is(pg_temp.claim_setting('a', :'q', false, false), 'off',
  'durable => false in a transaction that wrote nothing: it commits without waiting for the flush.');
select is(pg_temp.claim_setting('a', :'q', true, false), 'on', 'By default a claim leaves synchronous_commit alone.');
select is(pg_temp.claim_setting('a', :'q', false, true), 'on',
  'A transaction that wrote before the claim keeps its durability.');

-- Two claims after a crash: a holds the new epoch row uncommitted, b waits for it.
select pid as b_pid from dblink('b', 'select pg_backend_pid()') as x(pid int) \gset
select dblink_exec('stage', 'delete from conductor.claim_epoch') as crashed \gset
select dblink_exec('a', 'begin') as ba \gset
create temp table got_a as
select * from dblink('a', format('select attempt_id from conductor.claim(''a'', array[%L], 1)', :'q')) as r(id bigint);
select dblink_send_query('b', format('select attempt_id from conductor.claim(''b'', array[%L], 1)', :'q')) as sent \gset
select ok(conductor_tests.await_lock_wait(:b_pid),
  'A second claim that finds the epoch row missing while the first writes it waits for that row.');
select dblink_exec('a', 'commit') as ca \gset
create temp table got_b as select * from dblink_get_result('b') as r(id bigint);
select cmp_ok((select id from got_b), '>', (select id from got_a),
  'Once the first commits, the second goes on past the first''s ids, from the moved sequence (no second move '
  'hands out the first''s ids again).');
select is((select id from got_b) - (select id from got_a), 1::bigint,
  'It takes the next id: the sequence was moved once.');

-- Clean up the committed rows.
select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('a') as x2 \gset
select dblink_disconnect('b') as x3 \gset

select * from finish();
rollback;
