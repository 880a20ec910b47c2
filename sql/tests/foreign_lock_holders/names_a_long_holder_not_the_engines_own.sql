-- foreign_lock_holders(hold) tells the engine's own locks from a foreign session's:
--   - an enqueueing transaction left open holds the enqueue keys shared: not named;
--   - an exclusive holder of them that lets go within hold (as sleep() does): not named;
--   - an exclusive holder that keeps them in one transaction for hold: named;
--   - a session waiting for them exclusively (enqueues queue behind it) for hold: named.
-- dblink sessions: 'client' (an open enqueue), 'brief' (holds for 0.1 s in one statement),
-- 'squatter' (a transaction that keeps the key), 'waiter' (asks for it exclusively).
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'flh-long-' || pg_backend_pid() as q \gset
select dblink_connect(c, conductor_tests.conninfo() || ' application_name=flh-' || c) as x
  from unnest(array['client', 'brief', 'squatter', 'waiter', 'stage']) c;
select pid as client_pid from dblink('client', 'select pg_backend_pid()') as x(pid integer) \gset
select pid as brief_pid from dblink('brief', 'select pg_backend_pid()') as x(pid integer) \gset
select pid as squatter_pid from dblink('squatter', 'select pg_backend_pid()') as x(pid integer) \gset
select pid as waiter_pid from dblink('waiter', 'select pg_backend_pid()') as x(pid integer) \gset
create function pg_temp.named(pid integer, hold interval) returns text language sql as $$
  select coalesce(string_agg(key_space || ':' || label || ':' || mode, ',' order by key_space, label, mode), '')
    from conductor.foreign_lock_holders(hold) h where h.pid = named.pid $$;

-- an enqueue whose transaction stays open holds its in-flight keys shared (functions/notify)
select dblink_exec('client', 'begin') as b \gset
select * from dblink('client', format($$select conductor.enqueue('k', '{}', %L)$$, :'q')) as x(id bigint);
select is(pg_temp.named(:client_pid, '0.2 s'), '', 'An enqueue''s open transaction (shared in-flight keys) is the engine''s own: not named.');
select dblink_exec('client', 'rollback') as r \gset

-- a holder that lets go within hold: seen, then gone
select dblink_send_query('brief', $$select pg_advisory_xact_lock(hashtext('conductor:enqueue:any'), 0), pg_sleep(0.1)$$) as s \gset
do $$ begin
  for i in 1..500 loop
    exit when exists (select from pg_locks l where l.locktype = 'advisory' and l.granted and l.mode = 'ExclusiveLock'
                        and l.objsubid = 2 and l.pid <> pg_backend_pid());
    perform pg_sleep(0.005);
  end loop;
end $$;
select is(pg_temp.named(:brief_pid, '1 s'), '', 'An exclusive holder that lets go within hold (as sleep() does) is not named.');
select * from dblink_get_result('brief') as x(a text, b text);

-- a transaction that keeps the key exclusively
select dblink_exec('squatter', 'begin') as b \gset
select * from dblink('squatter', $$select pg_advisory_xact_lock(hashtext('conductor:enqueue:queue'), hashtext('billing'))$$) as x(t text);
select is(pg_temp.named(:squatter_pid, '0.2 s'), 'enqueue in-flight:a queue:ExclusiveLock',
  'An exclusive holder that keeps the key in one transaction for hold is named.');
select is((select reason from conductor.foreign_lock_holders('0.2 s') h where h.pid = :squatter_pid),
  'holds it exclusively for over 00:00:00.2', 'The reason says so.');
select dblink_exec('squatter', 'commit') as c \gset

-- a session that waits for the key exclusively, behind an enqueue's open transaction
select dblink_exec('client', 'begin') as b \gset
select * from dblink('client', format($$select conductor.enqueue('k', '{}', %L)$$, :'q')) as x(id bigint);
select dblink_send_query('waiter', $$select pg_advisory_lock(hashtext('conductor:enqueue:any'), 0)$$) as s \gset
select ok(conductor_tests.await_lock_wait(:waiter_pid), '(The waiter waits.)');
select pg_sleep(0.3);
select is(pg_temp.named(:waiter_pid, '0.2 s'), 'enqueue in-flight:any queue:ExclusiveLock',
  'A session waiting for an enqueue key exclusively for hold is named (enqueues would queue behind it).');
select dblink_exec('client', 'rollback') as r \gset
select * from dblink_get_result('waiter') as x(t text);

select dblink_disconnect(c) from unnest(array['client', 'brief', 'squatter', 'waiter', 'stage']) c;
select * from finish();
rollback;
