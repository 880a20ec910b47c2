-- complete_many stores what it can: a result over conductor.settings.max_result_bytes fails
-- its task at once (no retry, even with attempts left), with 'result not storable: ...' on the
-- task and on its attempt, and is answered 'failed'; the other results of the batch are stored.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';
update conductor.settings set max_result_bytes = 100;

select conductor.enqueue('k', '{}', 'unstorable-1') as t1 \gset
select conductor.enqueue('k', '{}', 'unstorable-2', max_attempts => 3) as t2 \gset
select conductor.enqueue('k', '{}', 'unstorable-3') as t3 \gset
select conductor.enqueue('k', '{}', 'unstorable-4') as t4 \gset
select conductor_tests.claim_one('unstorable-1') as a1 \gset
select conductor_tests.claim_one('unstorable-2') as a2 \gset
select conductor_tests.claim_one('unstorable-3') as a3 \gset
select conductor_tests.claim_one('unstorable-4') as a4 \gset
select jsonb_build_object('s', repeat('x', 200)) as big \gset
select pg_column_size(:'big'::jsonb) as big_size \gset

set local conductor.fake_now = '2030-01-01 00:00:10+00';
select set_eq(
  format($$select attempt_id, task_id, state from conductor.complete_many(array[%s, %s, %s, %s]::bigint[],
           array['{"r": 1}', %L, '{"r": 3}', NULL]::jsonb[])$$, :a1, :a2, :a3, :a4, :'big'),
  format($$values (%s::bigint, %s::bigint, 'failed'::text)$$, :a2, :t2),
  'The answer names only the attempt whose result could not be stored, with state failed.');
select results_eq(format('select id, status::text, result from conductor.tasks where id in (%s, %s, %s) order by id', :t1, :t3, :t4),
  format($$values (%s::bigint, 'succeeded'::text, '{"r": 1}'::jsonb), (%s, 'succeeded', '{"r": 3}'), (%s, 'succeeded', NULL)$$,
         :t1, :t3, :t4),
  'The other tasks of the batch are succeeded with their results.');
select is(
  (select jsonb_build_object('status', status, 'result', result, 'lease_expires_at', lease_expires_at,
     'finished_at', finished_at) from conductor.tasks where id = :t2),
  jsonb_build_object('status', 'failed', 'result', null, 'lease_expires_at', null,
     'finished_at', '2030-01-01 00:00:10+00'::timestamptz),
  'The task of the oversized result is failed at once (though it had attempts left), without a result.');
select is((select error from conductor.tasks where id = :t2),
  format('result not storable: %s bytes of jsonb, over the limit of 100 bytes (conductor.settings.max_result_bytes)', :big_size),
  'The task''s error says why: the size and the limit.');
select is((select (outcome, error, finished_at)::text from conductor.attempts where id = :a2),
  (select ('failed', error, '2030-01-01 00:00:10+00'::timestamptz)::text from conductor.tasks where id = :t2),
  'Its attempt is closed as failed with the same error.');
select is((select array_agg(outcome order by id) from conductor.attempts where id in (:a1, :a3, :a4)),
  array['succeeded', 'succeeded', 'succeeded'], 'The other attempts are closed as succeeded.');
select is((select state from conductor.complete_many(array[:a2]::bigint[], array[:'big']::jsonb[])), 'finished',
  'The batch sent again answers the failed attempt as finished: it has reported.');

select * from finish();
rollback;
