-- conductor_admin can do what the client and the worker do, and prune.
begin;
select plan(6);

set local conductor.fake_now = '2030-01-01 00:00:00+00';
create role t_admin;
grant conductor_admin to t_admin;
set local role t_admin;

select conductor.enqueue(kind => 'k', queue => 'ro-a') as t \gset
select attempt_id as a from conductor.claim(worker_id => 'w-admin', queues => array['ro-a'], max_tasks => 1, lease => interval '1 minute') \gset
select lives_ok(format('select conductor.complete(attempt_id => %s)', :a), 'An admin completes a task it claimed.');
select conductor.enqueue(kind => 'k', queue => 'ro-a') as t2 \gset
select is(conductor.cancel(task_id => :t2), 1, 'An admin cancels a task.');
select lives_ok('select * from conductor.stats()', 'An admin reads stats().');
select lives_ok('select conductor.reap()', 'An admin reaps.');
set local conductor.fake_now = '2030-02-01 00:00:00+00';
select is(conductor.prune(older_than => interval '7 days'), 2::bigint, 'An admin prunes old finished tasks.');
select is((select count(*) from conductor.tasks where queue = 'ro-a'), 0::bigint, 'The pruned tasks are gone.');

reset role;
select * from finish();
rollback;
