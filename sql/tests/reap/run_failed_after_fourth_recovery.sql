-- "A run that still hasn't finished after four recoveries is marked failed": lost workers are
-- counted across the whole run (the root, before and after it resumed, and its children),
-- even where each task has recoveries to spare (max_recoveries 10). After three the run goes
-- on; the fourth fails the root, with an error that says why, and cancels its unfinished
-- descendants (a running one learns it at its next heartbeat); the cancelled ones are kept
-- for retry. As a worker login, on the fake clock.
begin;
select plan(12);
\ir ../helpers.psql
create role t_worker;
grant conductor_worker to t_worker;
grant usage on schema conductor_tests to t_worker;
grant execute on all functions in schema conductor_tests to t_worker;
set local role t_worker;

-- at: hours and minutes after 2030-01-01 00:00 UTC
create function pg_temp.at(h integer, m integer default 0) returns void language sql as $$
  select set_config('conductor.fake_now', (timestamptz '2030-01-01 00:00:00+00' + h * interval '1 hour' + m * interval '1 minute')::text, true)::text;
$$;

select pg_temp.at(0);
select conductor.enqueue('root', '{}', 'run-root', max_recoveries => 10, run_at => '2030-01-01 00:00:00+00') as root \gset
-- 1: the root's worker is lost before the root spawned anything
select conductor_tests.claim_one('run-root', 'w-a', '1 minute') as a1 \gset
select pg_temp.at(0, 2);
select conductor.reap() as r1 \gset
-- the root runs again (a resume of the run), spawns two children, and waits for them
select pg_temp.at(1);
select conductor_tests.claim_one('run-root', 'w-b', '1 hour') as a2 \gset
select conductor.spawn(:a2, 'one', 'kid', '{}', 'run-kid-1', max_recoveries => 10) as c1 \gset
select conductor.spawn(:a2, 'two', 'kid', '{}', 'run-kid-2', max_recoveries => 10) as c2 \gset
select state from conductor.suspend(:a2, 'join', 'children_all') \gset
-- 2 and 3: the first child's worker is lost twice
select conductor_tests.claim_one('run-kid-1', 'w-c', '1 minute') as k1 \gset
select pg_temp.at(1, 2);
select conductor.reap() as r2 \gset
select pg_temp.at(2);
select conductor_tests.claim_one('run-kid-1', 'w-d', '1 minute') as k2 \gset
select pg_temp.at(2, 2);
select conductor.reap() as r3 \gset

select is((select recoveries from conductor.run_recoveries where root_id = :root), 3,
  'Three lost workers are counted against the run.');
select is((select array_agg(status::text order by id) from conductor.tasks where root_id = :root),
  array['waiting', 'queued', 'queued'], 'After three the run goes on: the root waits, its children are queued.');

-- 4: the first child runs on a live worker; the second child's worker is lost
select pg_temp.at(3);
select conductor_tests.claim_one('run-kid-1', 'w-e', '1 hour') as k3 \gset
select conductor_tests.claim_one('run-kid-2', 'w-f', '1 minute') as k4 \gset
select pg_temp.at(3, 2);
select is(conductor.reap(), 2, 'The fourth lost worker is reaped, and the run is failed: reap counts both.');

select is(
  (select jsonb_build_object('status', status, 'error', error, 'finished_at', finished_at, 'wait_for', wait_for)
     from conductor.tasks where id = :root),
  jsonb_build_object('status', 'failed',
    'error', 'run failed: it had not finished after 4 recoveries (workers lost while running its tasks; '
             'conductor.settings.max_run_recoveries is 4); 2 unfinished task(s) of the run were cancelled',
    'finished_at', '2030-01-01 03:02:00+00'::timestamptz, 'wait_for', null),
  'The root is failed with an error that says why, and what became of the rest of the run.');
select is((select array_agg((status, recoveries)::text order by id) from conductor.tasks where root_id = :root),
  array['(failed,1)', '(cancelled,2)', '(cancelled,1)'],
  'Its unfinished children are cancelled; each task kept its own count (1 + 2 + 1 = 4).');
select is((select outcome from conductor.attempts where id = :k3), 'cancelled',
  'The running child''s attempt is closed as cancelled...');
select results_eq(format($$select state from conductor.heartbeat('w-e', array[%s]::bigint[])$$, :k3),
  $$values ('cancelled'::text)$$, '... so its worker learns it at its next heartbeat.');
select is((select outcome from conductor.attempts where id = :k4), 'lost', 'The lost child''s attempt is closed as lost.');
select is((select (recoveries, stopped)::text from conductor.run_recoveries where root_id = :root),
  format('(4,"{%s,%s}")', :c1, :c2), 'The run''s count and the descendants its failure cancelled are kept.');
select is_empty(format($$select * from conductor.steps where task_id = %s and name = 'join'$$, :root),
  'The root''s wait is not woken by its children''s cancellation: no outcome is checkpointed.');

-- nothing more happens at the next reap
select pg_temp.at(4);
select is(conductor.reap(), 0, 'The next reap has nothing to do for the failed run.');
select is((select recoveries from conductor.run_recoveries where root_id = :root), 4, 'The count stays.');

select * from finish();
rollback;
