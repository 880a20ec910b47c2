-- A run's recoveries count its resumes too: a single task that sleeps durably between its
-- lost workers is one run; its fourth lost worker fails it (max_recoveries 10 spares the task,
-- not the run), with no descendant to cancel. conductor.settings.max_run_recoveries is the
-- limit (an admin's: NULL counts but never fails a run). A run that finishes drops its count.
-- As a worker login, on the fake clock.
begin;
select plan(7);
\ir ../helpers.psql
create role t_worker;
grant conductor_worker to t_worker;
grant usage on schema conductor_tests to t_worker;
grant execute on all functions in schema conductor_tests to t_worker;

-- one lost worker of the run in queue q, then a durable sleep it wakes from; at hour h
create function pg_temp.lose_and_resume(q text, h integer) returns text language plpgsql as $$
declare
  v_attempt bigint;
begin
  perform set_config('conductor.fake_now', (timestamptz '2030-01-01 00:00:00+00' + h * interval '1 hour')::text, true);
  perform conductor_tests.claim_one(q, 'w-lost', '1 minute');
  perform set_config('conductor.fake_now', (timestamptz '2030-01-01 00:02:00+00' + h * interval '1 hour')::text, true);
  perform conductor.reap();
  if (select t.status from conductor.tasks t where t.queue = q) <> 'queued' then
    return (select t.status::text from conductor.tasks t where t.queue = q);
  end if;
  v_attempt := conductor_tests.claim_one(q, 'w-live', '1 minute');
  perform conductor.suspend(v_attempt, 'nap-' || h, 'sleep', duration => interval '10 minutes');
  perform set_config('conductor.fake_now', (timestamptz '2030-01-01 00:30:00+00' + h * interval '1 hour')::text, true);
  perform conductor.reap();
  return (select t.status::text from conductor.tasks t where t.queue = q);
end
$$;
grant execute on function pg_temp.lose_and_resume(text, integer) to t_worker;

select conductor.enqueue('napper', '{}', 'run-nap', max_recoveries => 10, run_at => '2030-01-01 00:00:00+00') as t \gset
set local role t_worker;
select is(array[pg_temp.lose_and_resume('run-nap', 0), pg_temp.lose_and_resume('run-nap', 1), pg_temp.lose_and_resume('run-nap', 2)],
  array['queued', 'queued', 'queued'], 'Three lost workers, each followed by a sleep and a resume: the run goes on.');
select is(pg_temp.lose_and_resume('run-nap', 3), 'failed', 'The fourth lost worker fails the run.');
select is((select (recoveries, error)::text from conductor.tasks where id = :t),
  '(4,"run failed: it had not finished after 4 recoveries (workers lost while running its tasks; '
  'conductor.settings.max_run_recoveries is 4); 0 unfinished task(s) of the run were cancelled")',
  'Its error says why; there was nothing else to cancel.');
reset role;

-- the limit is the admin's setting; NULL: counted, never failed
update conductor.settings set max_run_recoveries = null;
select conductor.enqueue('napper', '{}', 'run-free', max_recoveries => 10, run_at => '2030-01-01 00:00:00+00') as u \gset
set local role t_worker;
select is(array[pg_temp.lose_and_resume('run-free', 10), pg_temp.lose_and_resume('run-free', 11),
                pg_temp.lose_and_resume('run-free', 12), pg_temp.lose_and_resume('run-free', 13),
                pg_temp.lose_and_resume('run-free', 14)],
  array['queued', 'queued', 'queued', 'queued', 'queued'], 'With max_run_recoveries NULL a run survives five.');
select is((select recoveries from conductor.run_recoveries where root_id = :u), 5, 'They are counted still.');

-- a run that finishes drops its count at the next reap
select conductor.complete(conductor_tests.claim_one('run-free', 'w-live', '1 minute'), '"done"') as c \gset
select conductor.reap() as r \gset
select is_empty(format('select * from conductor.run_recoveries where root_id = %s', :u),
  'Once the run succeeded, reap() deletes its count.');
select isnt_empty(format('select * from conductor.run_recoveries where root_id = %s', :t),
  'The count of the run the limit failed stays, for its retry.');

select * from finish();
rollback;
