-- While one claim holds a key's slot uncommitted, a second claim of the same queue for one
-- task takes the next key's task instead of none: the key probe passes over a slot another
-- claim holds to the next candidate, in claim order (v0.2.0 probed only the first
-- max_tasks keys, so the second claim came back empty while tasks of other keys waited).
-- Keys are this test's own (named after its queue); tasks committed through a dblink
-- session and deleted at the end.
begin;
select plan(3);
\ir ../helpers.psql
create extension if not exists dblink;

select 'ckey-next-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('holder', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('other', conductor_tests.conninfo()) as c3 \gset
select dblink_exec('other', 'set lock_timeout = ''2s''') as s \gset
select dblink_exec('stage', format(
  'do $s$ begin
     perform conductor.enqueue(''k'', ''{}'', %1$L, concurrency_key => %1$L || k) from unnest(array[''-a'', ''-b'', ''-c'']) k;
   end $s$', :'q')) as staged \gset
create function pg_temp.claimed(conn text, worker text, queue text) returns text
  language sql as $$
  select coalesce(string_agg(k, ','), '') from dblink(conn, format(
    'select (select concurrency_key from conductor.tasks where id = task_id) from conductor.claim(%L, array[%L], 1)', worker, queue))
    as o(k text) $$;

select dblink_exec('holder', 'begin') as b \gset
select is(pg_temp.claimed('holder', 'holder', :'q'), :'q' || '-a', 'The first claim takes key a''s task and stays uncommitted.');
select is(pg_temp.claimed('other', 'other', :'q'), :'q' || '-b', 'A second claim of one task takes key b''s, not none.');
select dblink_exec('holder', 'commit') as c \gset
select is(pg_temp.claimed('other', 'other', :'q'), :'q' || '-c', 'and the next, key c''s.');

select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d2 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('holder') as x2 \gset
select dblink_disconnect('other') as x3 \gset
select * from finish();
rollback;
