-- Keys map to one of 65536 slot rows (conductor._concurrency_slot); two keys that share a
-- slot still each run one task at a time and do not block each other for longer than a
-- claim: one claim takes a task of each (it locks the slot once), and while another
-- claim holds the slot uncommitted a claim passes over both keys, getting them once it
-- commits. slot-33 and slot-948 share slot 64017. The tasks are committed through a dblink
-- session and deleted at the end.
begin;
select plan(4);
\ir ../helpers.psql
create extension if not exists dblink;

select is(conductor._concurrency_slot('slot-33'), conductor._concurrency_slot('slot-948'),
  'The two keys share a slot.');

select 'ckey-slot-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('holder', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('other', conductor_tests.conninfo()) as c3 \gset
select dblink_exec('other', 'set lock_timeout = ''2s''') as s \gset
select dblink_exec('stage', format(
  'do $s$ begin
     perform conductor.enqueue(''k'', ''{}'', %1$L, concurrency_key => k) from unnest(array[''slot-33'', ''slot-33'', ''slot-948'', ''slot-948'']) k;
     perform conductor.enqueue(''k'', ''{}'', %1$L || ''-2'', concurrency_key => ''slot-948'');
   end $s$', :'q')) as staged \gset
create function pg_temp.claimed(conn text, worker text, queue text) returns text
  language sql as $$
  select coalesce(string_agg(k, ',' order by k), '') from dblink(conn, format(
    'select (select concurrency_key from conductor.tasks where id = task_id) from conductor.claim(%L, array[%L], 10)', worker, queue))
    as o(k text) $$;

select dblink_exec('holder', 'begin') as b \gset
select is(pg_temp.claimed('holder', 'holder', :'q'), 'slot-33,slot-948',
  'One claim takes one task of each key, though they share a slot.');
-- a task of slot-948 in another queue: its key's slot is held
select is(pg_temp.claimed('other', 'other', :'q' || '-2'), '',
  'While that claim is uncommitted, another claim passes over a task of a key whose slot it holds (no wait: lock_timeout 2 s).');
select dblink_exec('holder', 'commit') as c \gset
select is(pg_temp.claimed('other', 'other', :'q' || '-2'), '',
  'After the commit that key has a running task, so nothing of it is claimed either way.');

select dblink_exec('stage', format(
  'delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue in (%L, %L)', :'q', :'q' || '-2')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue in (%L, %L)', :'q', :'q' || '-2')) as d2 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('holder') as x2 \gset
select dblink_disconnect('other') as x3 \gset
select * from finish();
rollback;
