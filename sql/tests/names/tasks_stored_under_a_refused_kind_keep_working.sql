-- A database upgraded from v0.2.0 may hold tasks, a kind row and a schedule under a kind
-- that the rule now refuses (v0.2.0 took any kind of 1-200 characters without surrounding
-- spaces). What is stored keeps working: a worker names the kind in its kinds list,
-- registers it, claims, fails and completes its tasks, and a client retries one. What would
-- declare something new under the name is refused with QC101: an enqueue, configure_kind,
-- a rate limit; the stored schedule records that QC101 at its due time instead of firing.
begin;
select plan(12);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;
create role t_client;
grant conductor_client to t_client;

-- rows as v0.2.0 stored them, renamed by the owner (no API takes the name any more)
select conductor.enqueue('legacy.placeholder', '{"n": 1}', 'legacy-q') as t1 \gset
select conductor.enqueue('legacy.placeholder', '{"n": 2}', 'legacy-q') as t2 \gset
update conductor.tasks set kind = 'legacy' || chr(9) || 'kind' where id in (:t1, :t2);
insert into conductor.kinds (kind, max_attempts, updated_at) values ('legacy' || chr(9) || 'kind', 1, now());
select conductor.create_schedule('legacy-sched', '* * * * *', 'legacy.placeholder', queue => 'legacy-q') is not null as s \gset
update conductor.schedules set kind = 'legacy' || chr(9) || 'kind', next_due_at = '2030-01-01 00:00:00+00'
 where name = 'legacy-sched';

set local role t_worker;
select lives_ok(format('select conductor.register_worker(worker_id => %L, kinds => array[%L])', 'w-legacy',
                       'legacy' || chr(9) || 'kind'),
  'A worker registers with the stored kind in its kinds list.');
select is((select count(*) from conductor.claim(worker_id => 'w-legacy', queues => array['legacy-q'], max_tasks => 5,
                                                 lease => '60 seconds', kinds => array['legacy' || chr(9) || 'kind'])),
  2::bigint, 'It claims both stored tasks by naming their kind.');
reset role;
select id as a1 from conductor.attempts where task_id = :t1 \gset
select id as a2 from conductor.attempts where task_id = :t2 \gset
set local role t_worker;
select lives_ok(format('select conductor.complete(%s, %L)', :a1, '{"ok": true}'), 'It completes one.');
select is(conductor.fail(attempt_id => :a2, error => 'boom')::text, 'failed', 'It fails the other for good.');
select throws_ok(format('select conductor.configure_kind(%L, max_attempts => 3)', 'legacy' || chr(9) || 'kind'),
  'QC101', null, 'configure_kind refuses the stored kind: its row stays as it was.');
select throws_ok(format('select conductor.enqueue(%L)', 'legacy' || chr(9) || 'kind'), 'QC101', null,
  'No new task is enqueued under it.');
select throws_ok(format('select conductor.set_rate_limit(kind => %L, per_second => 1)', 'legacy' || chr(9) || 'kind'),
  'QC101', null, 'No rate limit is declared for it.');
select is((select count(*) from conductor.tick()), 0::bigint, 'tick fires nothing for the schedule stored under it.');

reset role;
select is((select kind from conductor.kinds where kind like 'legacy%'), 'legacy' || chr(9) || 'kind',
  'The stored kind row is untouched.');
select matches((select last_error from conductor.schedules where name = 'legacy-sched'), '^QC101: invalid kind',
  'The schedule records the QC101 as its last error (list_schedules and the dashboard show it).');

set local role t_client;
select is(conductor.retry(:t2), :t2::bigint, 'A client retries the failed task under the stored kind.');
reset role;
select is((select (status, kind)::text from conductor.tasks where id = :t2), format('(queued,"%s")', 'legacy' || chr(9) || 'kind'),
  'It is queued again under its kind.');

select * from finish();
rollback;
