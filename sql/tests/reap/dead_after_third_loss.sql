-- "A task whose worker dies three times is marked dead instead of being tried again": the
-- third lost worker of one task marks it dead ('worker lost 3 times'), by default
-- (max_recoveries 3, read now as the lost worker that is final); max_recoveries 0 and 1
-- make the first loss final, 2 the second. Run as a worker login, on the fake clock.
begin;
select plan(8);
\ir ../helpers.psql
create role t_worker;
grant conductor_worker to t_worker;

create function pg_temp.lose_once(q text, n integer) returns integer language plpgsql as $$
begin
  perform set_config('conductor.fake_now', (timestamptz '2030-01-01 00:00:00+00' + n * interval '1 hour')::text, true);
  perform conductor_tests.claim_one(q, 'w-crash', '1 minute');
  perform set_config('conductor.fake_now', (timestamptz '2030-01-01 00:02:00+00' + n * interval '1 hour')::text, true);
  return conductor.reap();
end
$$;
grant execute on function pg_temp.lose_once(text, integer) to t_worker;
grant usage on schema conductor_tests to t_worker;
grant execute on all functions in schema conductor_tests to t_worker;

select conductor.enqueue('poison', '{}', 'poison-q', run_at => '2030-01-01 00:00:00+00') as t \gset
select conductor.enqueue('fragile', '{}', 'fragile-q', max_recoveries => 0, run_at => '2030-01-01 00:00:00+00') as f0 \gset
select conductor.enqueue('fragile', '{}', 'fragile1-q', max_recoveries => 1, run_at => '2030-01-01 00:00:00+00') as f1 \gset
select conductor.enqueue('fragile', '{}', 'fragile2-q', max_recoveries => 2, run_at => '2030-01-01 00:00:00+00') as f2 \gset
select is((select max_recoveries from conductor.tasks where id = :t), 3, 'A task''s max_recoveries is 3 by default.');

set local role t_worker;
select is(array[pg_temp.lose_once('poison-q', 0), pg_temp.lose_once('poison-q', 1)],
  array[1, 1], 'Two losses are each reaped.');
select is((select (status, recoveries, finished_at)::text from conductor.tasks where id = :t), '(queued,2,)',
  'After two losses the task is queued again with recoveries 2.');
select is(pg_temp.lose_once('poison-q', 2), 1, 'The third loss is reaped too.');
select is(
  (select jsonb_build_object('status', status, 'recoveries', recoveries, 'error', error, 'finished_at', finished_at,
     'lease_expires_at', lease_expires_at) from conductor.tasks where id = :t),
  jsonb_build_object('status', 'dead', 'recoveries', 3, 'error', 'worker lost 3 times',
     'finished_at', '2030-01-01 02:02:00+00'::timestamptz, 'lease_expires_at', null),
  'After the third loss the task is dead with error ''worker lost 3 times'', finished at the reap.');
select is((select count(*) from conductor.attempts where task_id = :t and outcome = 'lost'), 3::bigint,
  'Each loss left a lost attempt row.');

select pg_temp.lose_once('fragile-q', 0) + pg_temp.lose_once('fragile1-q', 0) as n \gset
select is((select array_agg((status, error)::text order by id) from conductor.tasks where id in (:f0, :f1)),
  array['(dead,"worker lost 1 times")', '(dead,"worker lost 1 times")'],
  'With max_recoveries 0 or 1 the first loss is final.');
select pg_temp.lose_once('fragile2-q', 0) + pg_temp.lose_once('fragile2-q', 1) as n \gset
select is((select (status, error)::text from conductor.tasks where id = :f2), '(dead,"worker lost 2 times")',
  'With max_recoveries 2 the second loss is final.');

select * from finish();
rollback;
