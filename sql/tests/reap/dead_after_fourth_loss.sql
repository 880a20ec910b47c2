-- The fourth lost worker of one task marks it dead ('worker lost 4 times'); max_recoveries 0 means the first.
begin;
select plan(6);
\ir ../helpers.psql

create function pg_temp.lose_once(q text, n integer) returns integer language plpgsql as $$
begin
  perform set_config('conductor.fake_now', (timestamptz '2030-01-01 00:00:00+00' + n * interval '1 hour')::text, true);
  perform conductor_tests.claim_one(q, 'w-crash', '1 minute');
  perform set_config('conductor.fake_now', (timestamptz '2030-01-01 00:02:00+00' + n * interval '1 hour')::text, true);
  return conductor.reap();
end
$$;

select conductor.enqueue('poison', '{}', 'poison-q', run_at => '2030-01-01 00:00:00+00') as t \gset

select is(array[pg_temp.lose_once('poison-q', 0), pg_temp.lose_once('poison-q', 1), pg_temp.lose_once('poison-q', 2)],
  array[1, 1, 1], 'Three losses are each reaped.');
select is((select (status, recoveries, finished_at)::text from conductor.tasks where id = :t), '(queued,3,)',
  'After three losses the task is queued with recoveries 3.');
select is(pg_temp.lose_once('poison-q', 3), 1, 'The fourth loss is reaped too.');
select is(
  (select jsonb_build_object('status', status, 'recoveries', recoveries, 'error', error, 'finished_at', finished_at,
     'lease_expires_at', lease_expires_at) from conductor.tasks where id = :t),
  jsonb_build_object('status', 'dead', 'recoveries', 4, 'error', 'worker lost 4 times',
     'finished_at', '2030-01-01 03:02:00+00'::timestamptz, 'lease_expires_at', null),
  'After the fourth loss the task is dead with error ''worker lost 4 times'', finished at the reap.');

select conductor.enqueue('fragile', '{}', 'fragile-q', max_recoveries => 0, run_at => '2030-01-01 00:00:00+00') as f \gset
select pg_temp.lose_once('fragile-q', 0) as n \gset
select is((select (status, error)::text from conductor.tasks where id = :f), '(dead,"worker lost 1 times")',
  'With max_recoveries 0 the first loss is final.');
select is((select count(*) from conductor.attempts where task_id = :t and outcome = 'lost'), 4::bigint,
  'Each loss left a lost attempt row.');

select * from finish();
rollback;
