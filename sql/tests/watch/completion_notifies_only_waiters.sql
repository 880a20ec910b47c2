-- A task's end notifies channel 'conductor_done' (payload: the finished ids joined by ',') only
-- when a session watches one of them (a committed conductor.result_waiters row, written by
-- watch()), and removes the waiters it told. A completion nobody waits on commits without
-- pg_notify's database-wide commit lock. complete, complete_many (naming only the watched ids
-- of the batch), cancel and a fail that ends the task all notify a watcher; a fail that
-- requeues the task is no end: nothing is sent and the watch stays.
-- result_waiters is keyed by backend pid: the 'watcher' dblink session calls watch() (each
-- call commits) and LISTENs on conductor_done; the 'writer' session finishes the tasks.
begin;
select plan(12);
\ir ../helpers.psql
create extension if not exists dblink;

select 'watch-done-' || pg_backend_pid() as q \gset
select dblink_connect('watcher', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('watcher', 'listen conductor_done') as l \gset

-- a task enqueued (and claimed, unless claim is false) in the writer session; returns its id
create function pg_temp.task(max_attempts integer default 3, claim boolean default true) returns bigint
  language plpgsql as $fn$
declare
  v_task bigint;
  v_queue text := 'watch-done-' || pg_backend_pid();
begin
  select t.id into strict v_task
    from dblink('writer', format('select conductor.enqueue(%L, queue => %L, max_attempts => %s)',
                                 'k', v_queue, max_attempts)) as t(id bigint);
  if claim then
    perform t.a
      from dblink('writer', format('select attempt_id from conductor.claim(worker_id => %L, queues => array[%L])',
                                   'w-' || v_queue, v_queue)) as t(a bigint);
  end if;
  return v_task;
end
$fn$;
create function pg_temp.attempt(task_id bigint) returns bigint language sql as $fn$
  select t.attempt_id from conductor.tasks t where t.id = task_id
$fn$;
create function pg_temp.watch(task_id bigint) returns text language sql as $fn$
  select w.status from dblink('watcher', format('select status::text from conductor.watch(%s)', task_id)) as w(status text)
$fn$;
-- the payloads on 'conductor_done' naming this file's tasks that sql, committed by the writer, sent
create function pg_temp.done_after(sql text) returns setof text language plpgsql as $fn$
declare
  v_mine bigint[];
begin
  perform dblink_exec('watcher', 'do $r$ begin end $r$');
  perform dblink_get_notify('watcher');  -- drain what came before
  perform dblink_exec('writer', sql);
  perform dblink_exec('watcher', 'do $r$ begin end $r$');  -- a round trip delivers what is pending
  select array_agg(t.id) into v_mine from conductor.tasks t where t.queue = 'watch-done-' || pg_backend_pid();
  return query select n.extra from dblink_get_notify('watcher') n
                where n.notify_name = 'conductor_done'
                  and case when n.extra = '*' then true
                           else string_to_array(n.extra, ',')::bigint[] && v_mine end;
end
$fn$;

select pg_temp.task() as t1 \gset
select is_empty(format('select pg_temp.done_after(%L)',
    format($w$do $s$ begin perform conductor.complete(%s); end $s$$w$, pg_temp.attempt(:t1))),
  'complete of a task nobody watches sends nothing.');

select pg_temp.task() as t2 \gset
select is(pg_temp.watch(:t2), 'running', 'The watcher watches a running task.');
select results_eq(format('select pg_temp.done_after(%L)',
    format($w$do $s$ begin perform conductor.complete(%s); end $s$$w$, pg_temp.attempt(:t2))),
  format('values (%L::text)', :t2),
  'complete of a watched task sends one notification naming it.');
select is_empty(format('select 1 from conductor.result_waiters where task_id = %s', :t2),
  'The completion removed the waiter it told.');

select pg_temp.task() as t3 \gset
select pg_temp.task() as t4 \gset
select pg_temp.task() as t5 \gset
select pg_temp.watch(:t3) as w3 \gset
select pg_temp.watch(:t5) as w5 \gset
select results_eq(format('select pg_temp.done_after(%L)',
    format($w$do $s$ begin perform conductor.complete_many(array[%s, %s, %s]); end $s$$w$,
           pg_temp.attempt(:t3), pg_temp.attempt(:t4), pg_temp.attempt(:t5))),
  format('values (%L::text)', :t3 || ',' || :t5),
  'complete_many of three tasks, two watched: one notification naming the watched two.');
select is_empty(format('select 1 from conductor.result_waiters where task_id in (%s, %s)', :t3, :t5),
  'Both waiters are removed.');

select pg_temp.task(claim => false) as t6 \gset
select is(pg_temp.watch(:t6), 'queued', 'The watcher watches a queued task.');
select results_eq(format('select pg_temp.done_after(%L)',
    format($w$do $s$ begin perform conductor.cancel(%s); end $s$$w$, :t6)),
  format('values (%L::text)', :t6),
  'cancel of a watched task notifies its watcher.');

select pg_temp.task(max_attempts => 1) as t7 \gset
select pg_temp.watch(:t7) as w7 \gset
select results_eq(format('select pg_temp.done_after(%L)',
    format($w$do $s$ begin perform conductor.fail(%s, 'boom'); end $s$$w$, pg_temp.attempt(:t7))),
  format('values (%L::text)', :t7),
  'A fail that ends a watched task (no attempts left) notifies its watcher.');
select is_empty(format('select 1 from conductor.result_waiters where task_id in (%s, %s)', :t6, :t7),
  'Their waiters are removed.');

select pg_temp.task(max_attempts => 3) as t8 \gset
select pg_temp.watch(:t8) as w8 \gset
select is_empty(format('select pg_temp.done_after(%L)',
    format($w$do $s$ begin perform conductor.fail(%s, 'boom'); end $s$$w$, pg_temp.attempt(:t8))),
  'A fail that requeues a watched task is no end: nothing is sent.');
select isnt_empty(format('select 1 from conductor.result_waiters where task_id = %s', :t8),
  'The watch stays.');

-- Clean up the committed rows.
select dblink_exec('writer', format(
  'delete from conductor.result_waiters w using conductor.tasks t where w.task_id = t.id and t.queue = %L', :'q')) as d0 \gset
select dblink_exec('writer', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('writer', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_exec('writer', format('delete from conductor.workers where id = %L', 'w-' || :'q')) as d3 \gset
select dblink_exec('watcher', 'unlisten conductor_done') as u \gset
select dblink_disconnect('watcher') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
