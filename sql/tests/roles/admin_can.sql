-- conductor_admin can do what the client and the worker do, prune, and retry or cancel by filter; it changes and
-- removes any login's kind, rate limit and worker registration, writes into any attempt's
-- log, and goes under the floors a worker login cannot (issue 25).
begin;
select plan(18);

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
select is((select pg_catalog.cardinality(tasks) from conductor.search_tasks(queue => 'ro-a', status => 'cancelled')), 1,
  'An admin searches tasks.');
select lives_ok('select conductor.reap()', 'An admin reaps.');
set local conductor.fake_now = '2030-02-01 00:00:00+00';
select is(conductor.prune(older_than => interval '7 days'), 2::bigint, 'An admin prunes old finished tasks.');
select is((select count(*) from conductor.tasks where queue = 'ro-a'), 0::bigint, 'The pruned tasks are gone.');

reset role;
create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;
select conductor.configure_kind(kind => 'ro-theirs', queue => 'ro-a');
select conductor.set_rate_limit(queue => 'ro-a', per_second => 10);
select conductor.set_queue_limit(queue => 'ro-a', max_running => 10);
select conductor.register_worker(worker_id => 'ro-their-w');
select conductor.enqueue(kind => 'k', queue => 'ro-a') as t3 \gset
select c.attempt_id as their_att from conductor.claim(worker_id => 'ro-their-w', queues => array['ro-a'], max_tasks => 1) c \gset
reset role;
set local role t_admin;
select lives_ok($$select conductor.configure_kind(kind => 'ro-theirs', queue => 'ro-b', retain_succeeded => interval '0')$$,
  'An admin changes a worker login''s kind, with less retention than the floor.');
select lives_ok($$select conductor.set_rate_limit(queue => 'ro-a', per_second => 0.001)$$,
  'An admin changes a worker login''s rate limit, under the rate floor.');
select lives_ok($$select conductor.set_rate_limit(queue => 'ro-a')$$, 'An admin removes a limit.');
select lives_ok($$select conductor.set_queue_limit(queue => 'ro-a', max_running => 1)$$,
  'An admin changes a worker login''s queue cap.');
select lives_ok($$select conductor.set_queue_limit(queue => 'ro-a')$$, 'An admin removes a queue cap.');
select lives_ok($$select conductor.register_worker(worker_id => 'ro-their-w', kinds => '{k}')$$,
  'An admin replaces a worker login''s registration.');
select lives_ok(format($$select conductor.save_log(attempt_id => %s, lines => '[]')$$, :their_att),
  'An admin writes into any attempt''s log.');
select lives_ok($$select conductor.deregister_worker(worker_id => 'ro-their-w')$$, 'An admin deregisters any worker.');
select conductor.cancel(conductor.enqueue(kind => 'k', queue => 'ro-bulk')) as bulk_t \gset
select is((select matching from conductor.preview_matching(action => 'retry', queue => 'ro-bulk')), 1::bigint,
  'An admin previews a bulk action.');
select is(conductor.retry_matching(queue => 'ro-bulk', expected => 1) + conductor.cancel_matching(queue => 'ro-bulk'), 2,
  'An admin retries and cancels by filter.');
select lives_ok($$update conductor.settings set min_retention = interval '1 hour', min_rate_limit = 0.1$$,
  'An admin sets the floors.');

reset role;
select * from finish();
rollback;
