-- conductor_client enqueues, reads, cancels and retries through the API, and reads stats.
begin;
select plan(14);

create role t_client;
grant conductor_client to t_client;
set local role t_client;

select isnt(conductor.enqueue(kind => 'k', queue => 'ro-c'), null, 'A client enqueues a task.');
select is((select count(*) from conductor.enqueue_many('[{"kind": "k", "queue": "ro-c"}, {"kind": "k", "queue": "ro-c"}]')),
  2::bigint, 'A client enqueues a batch.');
select max(id) as t from conductor.tasks where queue = 'ro-c' \gset
select is((select status::text from conductor.get_task(task_id => :t)), 'queued', 'A client reads a task with get_task.');
select is((select count(*) from conductor.list_tasks(queue => 'ro-c')), 3::bigint, 'A client lists tasks.');
select is((select count(*) from conductor.run_timeline(run_task_id => :t)), 2::bigint,
  'A client reads a run''s timeline (the task and its queued time).');
select is((select pg_catalog.cardinality(tasks) from conductor.search_tasks(queue => 'ro-c', status => 'queued')), 3,
  'A client searches tasks.');
select is(conductor.cancel(task_id => :t), 1, 'A client cancels a task.');
select is(conductor.retry(task_id => :t), :t::bigint, 'A client retries the cancelled task.');
select is((select s.ready from conductor.stats() s where s.queue = 'ro-c'), 3::bigint, 'A client reads stats().');
select is((select tasks from conductor.waiting_reasons(queue => 'ro-c') where reason = 'no_worker'), 3::bigint,
  'A client reads waiting_reasons(): no worker serves ro-c.');
select is((select count(*) from conductor.queue_series(since => '2030-01-01 00:00:00+00', until => '2030-01-01 01:00:00+00',
                                                       queues => array['ro-c'])), 60::bigint,
  'A client reads queue_series(): an hour of points by minute.');
select lives_ok('select * from conductor.leaders()', 'A client reads who holds the leader locks.');
select lives_ok('select * from conductor.list_schedules()', 'A client lists the schedules.');
select is((select count(*) from conductor.tasks where queue = 'ro-c'), 3::bigint, 'A client reads conductor.tasks directly.');

reset role;
select * from finish();
rollback;
