-- "Retrying it from the dashboard starts it again with a fresh count." A run failed by its
-- fourth recovery, retried by a client: the root is queued with fresh counts, the children
-- the failure cancelled are queued again with it (fresh counts too, their checkpoints kept),
-- and the run's count starts from zero: the next lost worker is its first. With keep_steps
-- => false the cancelled children stay cancelled (the replay spawns new ones). On the fake clock.
begin;
select plan(8);
\ir ../helpers.psql
create role t_client;
grant conductor_client to t_client;

create function pg_temp.at(h integer, m integer default 0) returns void language sql as $$
  select set_config('conductor.fake_now', (timestamptz '2030-01-01 00:00:00+00' + h * interval '1 hour' + m * interval '1 minute')::text, true)::text;
$$;
-- a run: a root that spawned a child and waits for it; the child's worker lost four times
create function pg_temp.failed_run(q text) returns bigint language plpgsql as $$
declare
  v_root bigint;
  v_attempt bigint;
begin
  perform pg_temp.at(0);
  v_root := conductor.enqueue('root', '{}', q, run_at => '2030-01-01 00:00:00+00');
  v_attempt := conductor_tests.claim_one(q);
  perform conductor.spawn(v_attempt, 'kid', 'kid', '{}', q || '-kid', max_recoveries => 10);
  perform conductor.suspend(v_attempt, 'join', 'children_all');
  for h in 1 .. 4 loop
    perform pg_temp.at(h);
    v_attempt := conductor_tests.claim_one(q || '-kid', 'w-lost', '1 minute');
    perform conductor.save_step(v_attempt, 'half-' || h, '1');
    perform pg_temp.at(h, 2);
    perform conductor.reap();
  end loop;
  return v_root;
end
$$;

select pg_temp.failed_run('retry-run') as root \gset
select id as kid from conductor.tasks where parent_id = :root \gset
select is((select array_agg(status::text order by id) from conductor.tasks where root_id = :root),
  array['failed', 'cancelled'], 'Setup: the limit failed the run and cancelled its child.');

set local role t_client;
select pg_temp.at(5);
select is(conductor.retry(:root), :root::bigint, 'A client retries the run''s root.');
reset role;
select is((select array_agg((status, attempt, recoveries, error)::text order by id) from conductor.tasks where root_id = :root),
  array['(queued,0,0,)', '(queued,0,0,)'],
  'The root and the child the failure cancelled are queued again, with fresh counts and no error.');
select is_empty(format('select * from conductor.run_recoveries where root_id = %s', :root), 'The run''s count is gone.');
select is((select count(*) from conductor.steps where task_id = :kid), 4::bigint, 'The child kept its checkpoints.');

select pg_temp.at(6);
select conductor_tests.claim_one('retry-run-kid', 'w-lost', '1 minute') as again \gset
select pg_temp.at(6, 2);
select conductor.reap() as r \gset
select is((select (t.status, r.recoveries)::text from conductor.tasks t join conductor.run_recoveries r on r.root_id = t.root_id
            where t.id = :kid), '(queued,1)',
  'The next lost worker is the run''s first: the run goes on.');

-- keep_steps => false: the replay spawns new children; the cancelled ones stay as they are
select pg_temp.failed_run('retry-fresh') as root2 \gset
set local role t_client;
select pg_temp.at(7);
select is(conductor.retry(:root2, keep_steps => false), :root2::bigint, 'A client retries another failed run, without its steps.');
reset role;
select is((select array_agg(status::text order by id) from conductor.tasks where root_id = :root2),
  array['queued', 'cancelled'], 'Its root is queued; its cancelled child stays cancelled.');

select * from finish();
rollback;
