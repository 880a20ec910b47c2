-- A claim naming code_versions takes only tasks with no recorded version or one it lists, in
-- every pick (one queue, several or all queues, the concurrency-key probe and pick, the pick
-- under per-key rate limits); the others stay queued and untouched for a worker that lists
-- their version. A claim naming none takes any. Claimed as conductor_worker.
begin;
select plan(8);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';
update conductor.settings set fake_clock = true;

-- v1 tasks at the heads of the queues (higher priority), and fresh ones behind them
select conductor.enqueue('k', '{}', 'cv-q', priority => 5) as v1a \gset
select conductor.enqueue('k', '{}', 'cv-q') as fresh_a \gset
select conductor.enqueue('k', '{}', 'cv-q2', priority => 5) as v1b \gset
select conductor.enqueue('k', '{}', 'cv-keyed', priority => 5, concurrency_key => 'cv-key1') as v1k \gset
select conductor.enqueue('k', '{}', 'cv-keyed', concurrency_key => 'cv-key2') as fresh_k \gset
update conductor.tasks set code_version = 'v1' where id in (:v1a, :v1b, :v1k);
select conductor_tests.task(:v1a) as v1a_before, conductor_tests.task(:v1b) as v1b_before,
       conductor_tests.task(:v1k) as v1k_before \gset

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

select results_eq(
  $$select task_id from conductor.claim('w-v2', array['cv-q'], 10, code_versions => array['v2'])$$,
  format($$values (%s::bigint)$$, :fresh_a),
  'From one queue, a v2-only worker steps over the v1 task at the head and takes the fresh one.');
select is_empty(
  $$select task_id from conductor.claim('w-v2', array['cv-q', 'cv-q2'], 10, code_versions => array['v2'])$$,
  'From several queues, it finds nothing it can replay.');
select results_eq(
  $$select task_id from conductor.claim('w-v2', array['cv-keyed'], 10, code_versions => array['v2', 'v0'])$$,
  format($$values (%s::bigint)$$, :fresh_k),
  'With concurrency keys, it takes the fresh key''s task and not the v1 one.');
reset role;
select is(conductor_tests.task(:v1a) || conductor_tests.task(:v1b) || conductor_tests.task(:v1k),
          :'v1a_before'::jsonb || :'v1b_before'::jsonb || :'v1k_before'::jsonb,
          'The v1 tasks stay queued and untouched (no attempt, no change).');
select is((select count(*) from conductor.attempts where task_id in (:v1a, :v1b, :v1k)), 0::bigint,
          'No attempt of a v1 task.');

-- a per-key rate limit on the queue: the rated pick keeps to the versions too
select conductor.enqueue('k', '{}', 'cv-rated', rate_key => 'r1') as v1r \gset
update conductor.tasks set code_version = 'v1' where id = :v1r;
select conductor.set_rate_limit(queue => 'cv-rated', per_second => 100, burst => 100, per_key => true) as rl \gset
set local role t_worker;
select is_empty(
  $$select task_id from conductor.claim('w-v2', array['cv-rated'], 10, code_versions => array['v2'])$$,
  'Under a per-key rate limit, the v2-only worker does not take the v1 task.');
select results_eq(
  $$select task_id from conductor.claim('w-v2v1', null, 10, code_versions => array['v2', 'v1']) order by task_id$$,
  format($$values (%s::bigint), (%s), (%s), (%s)$$, :v1a, :v1b, :v1k, :v1r),
  'A worker that still replays v1 takes every v1 task, from every queue.');
reset role;
select conductor.enqueue('k', '{}', 'cv-any') as v3 \gset
update conductor.tasks set code_version = 'v3' where id = :v3;
set local role t_worker;
select results_eq(
  $$select task_id from conductor.claim('w-none', array['cv-any'], 10)$$,
  format($$values (%s::bigint)$$, :v3),
  'A claim naming no versions takes a task of any version, as before.');

select * from finish();
rollback;
