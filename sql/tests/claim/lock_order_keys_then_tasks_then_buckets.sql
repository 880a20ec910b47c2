-- claim's lock order (its map): concurrency slot rows, tried (SKIP LOCKED); then task rows,
-- tried (SKIP LOCKED); then rate limit buckets, FOR UPDATE in (scope, name) order, the only
-- wait. Two sessions claim keyed tasks of one rate-limited queue at once: the second waits
-- only on the bucket row the first holds (a tuple lock of conductor.rate_limits), never on
-- a slot or a task, and ends without a deadlock once the first commits, with the other
-- key's task. (Keys are global: this test's are named after its queue.) A client holding an open transaction that enqueued a task of the same key
-- makes no claim wait. On the fake clock; tasks committed through a third session and
-- deleted at the end.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'ckey-order-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('first', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('second', conductor_tests.conninfo()) as c3 \gset
select dblink_connect('client', conductor_tests.conninfo()) as c4 \gset
select count(dblink_exec(c, 'set conductor.fake_now = ''2032-05-01 00:00:00+00''')) as clocks
  from unnest(array['stage', 'first', 'second', 'client']) c \gset
select dblink_exec('second', 'set lock_timeout = ''5s''') as s \gset
select pid as second_pid from dblink('second', 'select pg_backend_pid()') as p(pid integer) \gset

select dblink_exec('stage', format(
  'do $s$ begin
     perform conductor.enqueue(''k'', ''{}'', %1$L, concurrency_key => %1$L || k) from unnest(array[''-a'', ''-a'', ''-b'']) k;
     perform conductor.set_rate_limit(queue => %1$L, per_second => 1, burst => 5);
   end $s$', :'q')) as staged \gset
-- a client's open transaction that enqueued a task of key a
select dblink_exec('client', 'begin') as b \gset
select * from dblink('client', format($$select conductor.enqueue('k', '{}', %1$L, concurrency_key => %1$L || '-a')$$, :'q')) as x(id bigint);

select dblink_exec('first', 'begin') as b \gset
select is((select string_agg(k, ',') from dblink('first', format(
  'select (select concurrency_key from conductor.tasks where id = task_id) from conductor.claim(''first'', array[%L], 1)', :'q'))
  as f(k text)), :'q' || '-a', 'The first session claims key a''s first task and keeps its transaction open (slot, task and bucket locked).');

select dblink_send_query('second', format(
  'select (select concurrency_key from conductor.tasks where id = task_id) from conductor.claim(''second'', array[%L], 10)', :'q')) as sent \gset
select ok(conductor_tests.await_lock_wait(:second_pid), 'The second session''s claim waits.');
select is((select count(*) from pg_locks l
            where l.pid = :second_pid and l.locktype = 'tuple' and l.relation = 'conductor.rate_limits'::regclass), 1::bigint,
  'It waits on the rate limit bucket''s row,');
select is((select count(*) from pg_locks l
            where l.pid = :second_pid and l.locktype = 'tuple'
              and l.relation in ('conductor.tasks'::regclass, 'conductor.concurrency_slots'::regclass)), 0::bigint,
  'not on a task or a concurrency slot (it passed over those).');
select dblink_exec('first', 'commit') as c \gset
select is((select string_agg(k, ',') from dblink_get_result('second') as s(k text)), :'q' || '-b',
  'Once the first commits, the second gets key b''s task and none of key a: no deadlock, no error.');
select count(*) as done from dblink_get_result('second') as s(k text) \gset

select dblink_exec('client', 'rollback') as r \gset
select is((select status from dblink('stage', format($$select string_agg(status::text, ',' order by id) from conductor.tasks where queue = %L$$, :'q')) as x(status text)),
  'running,queued,running', 'One task of each key runs.');

select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select * from dblink('stage', format($$select conductor.set_rate_limit(queue => %L)$$, :'q')) as x(t text);
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('first') as x2 \gset
select dblink_disconnect('second') as x3 \gset
select dblink_disconnect('client') as x4 \gset
select * from finish();
rollback;
