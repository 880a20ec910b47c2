-- A child ending while its parent's suspend (children_all) is uncommitted in another session:
-- the child's end locks the parent (a child before its parent), and a report waits at most
-- 200 ms for a row another transaction holds (issue 25), so the child's complete changes
-- nothing and answers 55P03 (complete_many: 'locked'); sent again once the suspend committed, it
-- sees the parent waiting and wakes it: no lost wake-up. Sessions over dblink: 'stage'
-- commits the run and cleans up, 'parent' suspends in an open transaction, 'child' completes.
begin;
select plan(7);
\ir ../helpers.psql
create extension if not exists dblink;

select 'race-child-' || pg_backend_pid() as q \gset
select dblink_connect('stage', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('parent', conductor_tests.conninfo()) as c2 \gset
select dblink_connect('child', conductor_tests.conninfo()) as c3 \gset

select t as root from dblink('stage', format('select conductor.enqueue(''root'', ''{}'', %L)', :'q')) as r(t bigint) \gset
select a as pa from dblink('stage', format('select attempt_id from conductor.claim(''w1'', array[%L])', :'q')) as r(a bigint) \gset
select c as kid from dblink('stage', format('select conductor.spawn(%s, ''c'', ''kid'', ''{}'', %L)', :pa, :'q' || '-kids')) as r(c bigint) \gset
select a as ca from dblink('stage', format('select attempt_id from conductor.claim(''w2'', array[%L])', :'q' || '-kids')) as r(a bigint) \gset
select pid as child_pid from dblink('child', 'select pg_backend_pid()') as r(pid int) \gset
-- whether the async query on conn returns within the time given
create function pg_temp.returns_within(conn text, span interval) returns boolean language plpgsql as $fn$
declare
  v_deadline timestamptz := clock_timestamp() + span;
begin
  while dblink_is_busy(conn) = 1 loop
    if clock_timestamp() > v_deadline then
      return false;
    end if;
    perform pg_sleep(0.01);
  end loop;
  return true;
end
$fn$;

select dblink_exec('parent', 'begin') as b \gset
select is((select s from dblink('parent', format('select state from conductor.suspend(%s, ''join'', ''children_all'')', :pa)) as r(s text)),
  'waiting', 'The parent''s suspend returns waiting inside its open transaction.');

select dblink_send_query('child', format('select conductor.complete(%s, ''"done"'')', :ca)) as sent \gset
select ok(pg_temp.returns_within('child', interval '3 seconds'),
  'The child''s end waits only a moment (200 ms) for the parent''s row while the suspend is uncommitted.');
select throws_ok($$select * from dblink_get_result('child') as r(v text)$$, '55P03', NULL,
  'It raises 55P03 (lock_not_available): nothing changed.');
select count(*) as ended from dblink_get_result('child', false) as r(v text) \gset
select is((select s from dblink('stage', format('select status::text from conductor.tasks where id = %s', :kid)) as r(s text)),
  'running', 'The child is still running, its attempt holding it.');

select dblink_exec('parent', 'commit') as c \gset
select lives_ok(format($$select * from dblink('child', 'select conductor.complete(%s, ''"done"'')') as r(v text)$$, :ca),
  'Sent again once the suspend committed, the child completes.');

select results_eq(format($$select * from dblink('stage', %L) as r(status text, n int, child_status text)$$,
    format('select t.status::text, jsonb_array_length(s.result), s.result->0->>''status'' from conductor.tasks t
              left join conductor.steps s on s.task_id = t.id and s.name = ''join'' where t.id = %s', :root)),
  $$values ('queued'::text, 1, 'succeeded'::text)$$,
  'The parent is queued again with the finished child in its checkpointed summary.');
select is((select s from dblink('stage', format('select status::text from conductor.tasks where id = %s', :kid)) as r(s text)),
  'succeeded', 'The child succeeded.');

-- Clean up the committed rows.
select dblink_exec('stage', format('delete from conductor.steps s using conductor.tasks t where s.task_id = t.id and t.queue in (%L, %L)', :'q', :'q' || '-kids')) as d1 \gset
select dblink_exec('stage', format('delete from conductor.attempts a using conductor.tasks t where a.task_id = t.id and t.queue in (%L, %L)', :'q', :'q' || '-kids')) as d2 \gset
select dblink_exec('stage', format('delete from conductor.tasks where queue in (%L, %L)', :'q', :'q' || '-kids')) as d3 \gset
select dblink_disconnect('stage') as x1 \gset
select dblink_disconnect('parent') as x2 \gset
select dblink_disconnect('child') as x3 \gset

select * from finish();
rollback;
