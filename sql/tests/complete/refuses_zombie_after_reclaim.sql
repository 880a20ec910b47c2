-- A zombie: attempt A's lease expired, the task was reaped, re-claimed as attempt B and completed.
-- A's late complete is refused with QC201 and the result stays B's.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'zombie-q') as t \gset
select conductor_tests.claim_one('zombie-q', 'zombie', '60 seconds') as a \gset
set local conductor.fake_now = '2030-01-01 00:02:00+00';
select conductor.reap() as reaped \gset
select conductor_tests.claim_one('zombie-q', 'healthy') as b \gset

select throws_ok(format('select conductor.complete(%s, %L)', :a, '{"by": "A"}'), 'QC201', NULL,
  'While B holds the task, A''s complete is refused with QC201.');
select conductor.complete(:b, '{"by": "B"}') as done \gset
select throws_ok(format('select conductor.complete(%s, %L)', :a, '{"by": "A"}'), 'QC201', NULL,
  'After B completed, A''s complete is still refused with QC201.');
select is((select (status, result, attempt_id)::text from conductor.tasks where id = :t),
  format('(succeeded,"{""by"": ""B""}",%s)', :b),
  'The task is succeeded with B''s result under B''s attempt_id.');
select is((select array_agg(outcome order by id) from conductor.attempts where task_id = :t),
  array['lost', 'succeeded'],
  'A is recorded as lost and B as succeeded.');

select * from finish();
rollback;
