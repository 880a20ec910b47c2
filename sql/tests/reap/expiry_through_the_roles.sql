-- Expiry as the roles meet it: a client enqueues with expires_in and retries the expired
-- task; a worker configures a kind's expires_in, spawns a child with one, and its reap
-- (reap_report, SECURITY DEFINER) ends the tasks past their deadline.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_exp_client;
grant conductor_client to t_exp_client;
create role t_exp_worker;
grant conductor_worker to t_exp_worker;

set local role t_exp_client;
select conductor.enqueue(kind => 'k', queue => 'ro-exp', expires_in => interval '1 minute') as by_client \gset
reset role;

set local role t_exp_worker;
select lives_ok($$select conductor.configure_kind(kind => 'ro-exp.kind', expires_in => interval '1 minute')$$,
  'A worker configures a kind''s expires_in.');
select conductor.enqueue(kind => 'root', queue => 'ro-exp-root') as root \gset
select attempt_id as a_root from conductor.claim(worker_id => 'w-exp-role', queues => array['ro-exp-root'],
                                                 max_tasks => 1, lease => interval '1 hour') \gset
select conductor.spawn(attempt_id => :a_root, step => 'c', kind => 'ro-exp.kind', queue => 'ro-exp') as child \gset
reset role;
select is((select pg_catalog.array_agg(expires_at order by id) from conductor.tasks where id in (:by_client, :child)),
  array['2030-01-01 00:01:00+00', '2030-01-01 00:01:00+00']::timestamptz[],
  'The client''s task and the worker''s child (its kind''s expires_in) have their deadlines.');

set local conductor.fake_now = '2030-01-01 00:01:00+00';
set local role t_exp_worker;
select is((select tasks_expired from conductor.reap_report()), 2, 'A worker''s reap ends both.');
reset role;
select is((select pg_catalog.array_agg(status::text order by id) from conductor.tasks where id in (:by_client, :child)),
  array['expired', 'expired'], 'Both are expired.');

set local role t_exp_client;
select is(conductor.retry(task_id => :by_client), :by_client::bigint, 'A client retries an expired task.');
select is((select expires_at from conductor.tasks where id = :by_client), '2030-01-01 00:02:00+00'::timestamptz,
  'It has a fresh deadline.');
reset role;

select * from finish();
rollback;
