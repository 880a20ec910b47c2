-- Under REPEATABLE READ or SERIALIZABLE, a beat committed after the transaction's snapshot
-- would make the task row unlockable (40001) although the attempt holds its task:
-- complete_in_transaction refuses those levels up front with QC213, naming the level,
-- changing nothing. The same attempt then completes at READ COMMITTED.
begin;
select plan(5);
\ir ../helpers.psql
\ir fixture.psql

select dblink_exec('worker', $w$create function pg_temp.complete_error(attempt_id bigint) returns text
  language plpgsql as $fn$
  begin
    perform conductor.complete_in_transaction(attempt_id => complete_error.attempt_id);
    return 'ok';
  exception when others then
    return sqlstate || ': ' || sqlerrm;
  end $fn$$w$) as f1 \gset

select pg_temp.running() as a1 \gset
select pg_temp.task_of(:a1) as t1 \gset
select pg_temp.work(:a1) as w0 \gset
select dblink_exec('worker', 'rollback') as k0 \gset
select dblink_exec('worker', 'begin isolation level repeatable read') as b1 \gset
select is((select m from dblink('worker', format('select pg_temp.complete_error(%s)', :a1)) as r(m text)),
  'QC213: complete_in_transaction needs a READ COMMITTED transaction, not ''repeatable read''',
  'REPEATABLE READ is refused with QC213, naming the level.');
select dblink_exec('worker', 'rollback') as k1 \gset
select dblink_exec('worker', 'begin isolation level serializable') as b2 \gset
select is((select m from dblink('worker', format('select pg_temp.complete_error(%s)', :a1)) as r(m text)),
  'QC213: complete_in_transaction needs a READ COMMITTED transaction, not ''serializable''',
  'SERIALIZABLE is refused with QC213, naming the level.');
select dblink_exec('worker', 'rollback') as k2 \gset
select is(pg_temp.status(:t1), 'running', 'Nothing changed: the task still runs.');
select pg_temp.work(:a1) as w1 \gset
select pg_temp.send_complete(:a1) as s1 \gset
select is(pg_temp.answer(), 'ok', 'At READ COMMITTED the same attempt completes.');
select dblink_exec('worker', 'commit') as k3 \gset
select is(pg_temp.status(:t1) || ' ' || pg_temp.effects(:t1), 'succeeded 1', 'The task succeeded with its effect row.');

\ir cleanup.psql
select * from finish();
rollback;
