-- An enqueue in a transaction at REPEATABLE READ or SERIALIZABLE notifies its queue even when
-- nobody sleeps on it: its snapshot is older than the statement, so it could miss a mark that
-- committed meanwhile (the advisory-lock barrier relies on a fresh snapshot per statement,
-- which only READ COMMITTED gives). At READ COMMITTED the same enqueue sends nothing.
-- Notifications are sent at commit, so a dblink session listens and another one commits.
begin;
select plan(3);
\ir ../helpers.psql
create extension if not exists dblink;

select 'sleep-rr-' || pg_backend_pid() as q \gset
select dblink_connect('listener', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('listener', 'listen conductor') as l \gset

create function pg_temp.notified_after(sql text) returns setof text language plpgsql as $fn$
begin
  perform dblink_exec('listener', 'do $r$ begin end $r$');
  perform dblink_get_notify('listener');  -- drain what came before
  perform dblink_exec('writer', sql);
  perform dblink_exec('listener', 'do $r$ begin end $r$');
  return query select n.extra from dblink_get_notify('listener') n
                where n.notify_name = 'conductor' and n.extra like 'sleep-rr-' || pg_backend_pid() || '%';
end
$fn$;

select results_eq(format('select pg_temp.notified_after(%L)',
    format($w$begin isolation level repeatable read; select conductor.enqueue('k', '{}', %L); commit$w$, :'q' || '-rr')),
  format('values (%L::text)', :'q' || '-rr'),
  'REPEATABLE READ, nobody sleeping: the enqueue notifies its queue anyway.');
select results_eq(format('select pg_temp.notified_after(%L)',
    format($w$begin isolation level serializable; select conductor.enqueue('k', '{}', %L); commit$w$, :'q' || '-ser')),
  format('values (%L::text)', :'q' || '-ser'),
  'SERIALIZABLE, nobody sleeping: the enqueue notifies its queue anyway.');
select is_empty(format('select pg_temp.notified_after(%L)',
    format($w$begin isolation level read committed; select conductor.enqueue('k', '{}', %L); commit$w$, :'q' || '-rc')),
  'READ COMMITTED, nobody sleeping: nothing.');

-- Clean up the committed rows.
select dblink_exec('writer', format('delete from conductor.tasks where queue like %L', :'q' || '%')) as d1 \gset
select dblink_exec('listener', 'unlisten conductor') as u \gset
select dblink_disconnect('listener') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
