-- One kind rule (conductor._spec_problem) closes every way a kind gets into the database:
-- enqueue, enqueue_many, spawn, configure_kind, create_schedule and set_rate_limit as
-- conductor_worker (the role all of them are granted to), update_schedule as conductor_admin.
-- Each refuses a kind with a newline, U+202E or markup with QC101 and stores nothing.
begin;
select plan(24);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;
create role t_admin;
grant conductor_admin to t_admin;

select conductor.enqueue('names.root', '{}', 'names-q') as root \gset
create temp table bad (what text, kind text);
insert into bad values ('a newline', 'names.job' || chr(10) || '2026-01-01 00:00:00 INFO forged'),
                       ('U+202E', 'names.' || chr(8238) || 'boj'),
                       ('markup', 'names.<img src=x onerror=alert(1)>');
grant select on bad to t_worker, t_admin;

set local role t_worker;
select attempt_id as a from conductor.claim(worker_id => 'w-names', queues => array['names-q'], max_tasks => 1, lease => '60 seconds') \gset

select throws_ok(format('select conductor.enqueue(%L)', kind), 'QC101', null,
                 format('enqueue refuses a kind with %s.', what)) from bad;
select throws_ok(format('select conductor.enqueue_many(%L)', jsonb_build_array(jsonb_build_object('kind', kind))),
                 'QC101', null, format('enqueue_many refuses a kind with %s.', what)) from bad;
select throws_ok(format('select conductor.spawn(%s, %L, %L)', :a, 'step-' || md5(kind), kind), 'QC101', null,
                 format('spawn refuses a child kind with %s.', what)) from bad;
select throws_ok(format('select conductor.configure_kind(%L, max_attempts => 2)', kind), 'QC101', null,
                 format('configure_kind refuses a kind with %s.', what)) from bad;
select throws_ok(format('select conductor.create_schedule(%L, %L, %L)', 'names-' || md5(kind), '* * * * *', kind),
                 'QC101', null, format('create_schedule refuses a kind with %s.', what)) from bad;
select throws_ok(format('select conductor.set_rate_limit(kind => %L, per_second => 5)', kind), 'QC101', null,
                 format('set_rate_limit refuses a kind with %s.', what)) from bad;

reset role;
set local role t_admin;
select conductor.create_schedule('names-sched', '* * * * *', 'names.ok') is not null as created \gset
select throws_ok(format('select conductor.update_schedule(%L, kind => %L)', 'names-sched', kind), 'QC101', null,
                 format('update_schedule refuses a kind with %s.', what)) from bad;

reset role;
select is((select count(*) from conductor.tasks t join bad b on b.kind = t.kind), 0::bigint, 'No task holds a refused kind.');
select is((select count(*) from conductor.kinds k join bad b on b.kind = k.kind), 0::bigint, 'No kind row holds one.');
select is((select count(*) from conductor.schedules s join bad b on b.kind = s.kind), 0::bigint, 'No schedule holds one.');

select * from finish();
rollback;
