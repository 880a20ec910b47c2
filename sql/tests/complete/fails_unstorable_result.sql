-- complete given a result over conductor.settings.max_result_bytes fails the task instead (no
-- retry), recording 'result not storable: ...' on the task and its attempt, and warns (QC107)
-- rather than raising, so the failure is kept; a result of exactly the limit is stored.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select jsonb_build_object('s', repeat('x', 200)) as big \gset
select pg_column_size(:'big'::jsonb) as big_size \gset
update conductor.settings set max_result_bytes = :big_size - 1;

select conductor.enqueue('k', '{}', 'complete-big', max_attempts => 2) as t \gset
select conductor.enqueue('k', '{}', 'complete-big') as t_edge \gset
select conductor_tests.claim_one('complete-big') as a \gset
select conductor_tests.claim_one('complete-big') as a_edge \gset

set local client_min_messages = error;  -- the WARNING (QC107) is expected
select lives_ok(format($$select conductor.complete(%s, %L)$$, :a, :'big'),
  'complete of an oversized result does not raise: the failure it records must commit.');
select is((select (status, result, error)::text from conductor.tasks where id = :t),
  (select ('failed', null::jsonb,
           format('result not storable: %s bytes of jsonb, over the limit of %s bytes (conductor.settings.max_result_bytes)',
                  :big_size, :big_size - 1))::text),
  'The task is failed at once, without a result, its error naming the size and the limit.');
select is((select (outcome, error)::text from conductor.attempts where id = :a),
  (select ('failed', error)::text from conductor.tasks where id = :t),
  'The attempt is closed as failed with the same error.');

select jsonb_build_object('s', repeat('x', 199)) as edge \gset
select is(pg_column_size(:'edge'::jsonb), :big_size - 1, 'The edge value is exactly the limit.');
select conductor.complete(:a_edge, :'edge') as done \gset
select is((select (status, result)::text from conductor.tasks where id = :t_edge), (select ('succeeded', :'edge'::jsonb)::text),
  'A result of exactly max_result_bytes is stored.');

select * from finish();
rollback;
