-- Issue 25: /health must say when a session outside the engine holds one of its advisory
-- keys. A login with no grant at all takes, with session locks, the enqueue in-flight keys
-- (hashtext('conductor:enqueue:any'), 0 and hashtext('conductor:enqueue:queue'),
-- hashtext(queue): held shared by enqueues, tried exclusively by sleep()) and the keys
-- v0.2.0 used for a leader, a concurrency key, an event and an exclusive() name, then
-- idles. foreign_lock_holders() names it, once per key space and label, with its pid,
-- login and application_name; a worker may call it, a client may not.
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'flh-' || pg_backend_pid() as q \gset
select dblink_exec(conductor_tests.conninfo(),
  $q$do $x$ begin create role t_nobody_flh login; exception when duplicate_object then null; end $x$$q$) as r \gset
select dblink_connect('squatter', replace(conductor_tests.conninfo(), 'user=' || current_user, 'user=t_nobody_flh')
                                  || ' application_name=squatter-flh') as c \gset
select pid as squatter_pid from dblink('squatter', 'select pg_backend_pid()') as x(pid integer) \gset

-- what the engine knows by name: an unfinished keyed task, an event, an exclusive() name
-- (committed through another session, whose enqueue holds no in-flight key after)
select dblink_connect('stage', conductor_tests.conninfo()) as c \gset
select dblink_exec('stage', format($f$do $x$ begin perform conductor.enqueue('k', '{}', %1$L, concurrency_key => %1$L || '-key'),
                                            conductor.emit_event(%1$L || '-event', '{}'), conductor.exclusive(%1$L || '-lock'); end $x$$f$, :'q')) as s \gset

select is((select ok from dblink('squatter', format($$select pg_try_advisory_lock(hashtext('conductor:enqueue:any'), 0)
    and pg_try_advisory_lock_shared(hashtext('conductor:enqueue:queue'), hashtext(%1$L))
    and pg_try_advisory_lock(hashtextextended('conductor.lead:scheduler', 0))
    and pg_try_advisory_lock(hashtextextended('conductor:concurrency:' || %1$L || '-key', 0))
    and pg_try_advisory_lock(hashtextextended('conductor:event:' || %1$L || '-event', 0))
    and pg_try_advisory_lock(hashtextextended('conductor.exclusive:' || %1$L || '-lock', 0))
    and pg_try_advisory_lock(hashtextextended('an application''s own lock', 0))$$, :'q')) as x(ok boolean)),
  true, 'The login without grants holds the keys with session locks, and idles.');

create role t_flh_worker;
grant conductor_worker to t_flh_worker;
set local role t_flh_worker;
select results_eq(
  format('select pid, usename, application_name, key_space, label, locks, mode, idle
            from conductor.foreign_lock_holders(hold => interval ''0'') where pid = %s', :squatter_pid),
  format($$values (%1$s, 't_nobody_flh'::text, 'squatter-flh'::text, 'concurrency key (v0.2.0)'::text, %2$L || '-key', 1, 'ExclusiveLock'::text, true),
                  (%1$s, 't_nobody_flh', 'squatter-flh', 'enqueue in-flight', 'a queue', 1, 'ShareLock', true),
                  (%1$s, 't_nobody_flh', 'squatter-flh', 'enqueue in-flight', 'any queue', 1, 'ExclusiveLock', true),
                  (%1$s, 't_nobody_flh', 'squatter-flh', 'event (v0.2.0)', %2$L || '-event', 1, 'ExclusiveLock', true),
                  (%1$s, 't_nobody_flh', 'squatter-flh', 'exclusive() (v0.2.0)', %2$L || '-lock', 1, 'ExclusiveLock', true),
                  (%1$s, 't_nobody_flh', 'squatter-flh', 'leader (v0.2.0)', 'scheduler', 1, 'ExclusiveLock', true)$$,
         :squatter_pid, :'q'),
  'A worker sees the session named once per key space and label, with its pid, login and application_name; the application''s own lock is not the engine''s.');
select ok((select bool_and(reason like 'holds it while idle%') from conductor.foreign_lock_holders(interval '0')
            where pid = :squatter_pid), 'The reason says it holds them while idle.');
reset role;
set local role conductor_client;
select throws_ok('select * from conductor.foreign_lock_holders()', '42501', NULL, 'A client may not call it.');
reset role;

select dblink_exec('stage', format($$delete from conductor.tasks where queue = %1$L;
  delete from conductor.events where name = %1$L || '-event'; delete from conductor.exclusive_locks where name = %1$L || '-lock'$$, :'q')) as d \gset
select dblink_disconnect('stage') as x \gset
select dblink_disconnect('squatter') as x \gset
select set_config('t.squatter_pid', :'squatter_pid', true) as c \gset
do $$ begin
  for i in 1..500 loop
    exit when not exists (select from pg_locks where pid = current_setting('t.squatter_pid')::integer);
    perform pg_sleep(0.01);
  end loop;
end $$;
select is_empty(format('select * from conductor.foreign_lock_holders(interval ''0'') where pid = %s', :squatter_pid),
  'Once it disconnects it is no longer named.');
select dblink_exec(conductor_tests.conninfo(), 'drop role t_nobody_flh') as r \gset
select * from finish();
rollback;
