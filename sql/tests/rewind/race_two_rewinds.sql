-- Two sessions rewind the same finished run at once: the second waits for the first's lock
-- of the task row, then finds the run queued and is refused with QC204; the run is rewound
-- once, from the first caller's step. A rewind waits for a fork in progress the same way
-- (fork locks the source FOR SHARE), and a fork after the rewind committed is refused.
-- dblink sessions: 'stage' (setup, cleanup), 'one' and 'two' (the callers).
begin;
select plan(5);
\ir ../helpers.psql
create extension if not exists dblink;

select 'rewind-race-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c0 \gset
select dblink_connect('one', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('two', conductor_tests.conninfo()) as c2 \gset
select pid as two_pid from dblink('two', 'select pg_backend_pid()') as r(pid int) \gset

select t from dblink('stage', format('select conductor.enqueue(''k'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select a from dblink('stage', format('select attempt_id from conductor.claim(''w1'', array[%L])', :'q')) as r(a bigint) \gset
select x from dblink('stage', format($s$select count(conductor.save_step(%s, n, '1')) from unnest(array['s1', 's2', 's3']) n$s$, :a)) as r(x bigint) \gset
select x from dblink('stage', format('select conductor.complete(%s, ''{}'')::text', :a)) as r(x text) \gset

select dblink_exec('one', 'begin') as b1 \gset
select is((select id from dblink('one', format('select conductor.rewind(%s, ''s3'')', :t)) as r(id bigint)), :t::bigint,
  'The first session rewinds the run from s3 and holds its transaction open.');
select dblink_send_query('two', format('select conductor.rewind(%s, ''s2'')', :t)) as sent \gset
select ok(conductor_tests.await_lock_wait(:two_pid), 'The second rewind waits for the first''s lock of the task row.');
select dblink_exec('one', 'commit') as c \gset
select throws_ok($$select * from dblink_get_result('two') as r(id bigint)$$, 'QC204', null,
  'Once the first committed, the second finds the run queued and is refused with QC204.');
select is((select n from dblink('stage', format('select array_agg(name order by seq)::text from conductor.steps where task_id = %s', :t)) as r(n text)),
  '{s1,s2}', 'The run was rewound once, from the first caller''s step.');
select throws_ok(format($$select * from dblink('stage', 'select conductor.fork(%s, ''s2'')') as r(id bigint)$$, :t), 'QC204', null,
  'A fork of the rewound (queued) run is refused with QC204.');

select dblink_exec('stage', format('delete from conductor.steps s using conductor.tasks t where s.task_id = t.id and t.queue = %L', :'q')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.task_deadlines d using conductor.tasks t where d.task_id = t.id and t.queue = %L', :'q')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue = %L', :'q')) as d3 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue = %L', :'q')) as d4 \gset
select dblink_disconnect('stage') as x0 \gset
select dblink_disconnect('one') as x1 \gset
select dblink_disconnect('two') as x2 \gset

select * from finish();
rollback;
