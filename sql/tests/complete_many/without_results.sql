-- complete_many with results NULL finishes every held task without a result.
begin;
select plan(2);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'many-nr') as t1 \gset
select conductor.enqueue('k', '{}', 'many-nr') as t2 \gset
select conductor_tests.claim_one('many-nr') as a1 \gset
select conductor_tests.claim_one('many-nr') as a2 \gset

select is_empty(format('select * from conductor.complete_many(array[%s, %s]::bigint[])', :a1, :a2),
  'Completing held attempts answers nothing.');
select results_eq(format('select status::text, result from conductor.tasks where id in (%s, %s) order by id', :t1, :t2),
  $$values ('succeeded', NULL::jsonb), ('succeeded', NULL::jsonb)$$,
  'Both tasks are succeeded without a result.');

select * from finish();
rollback;
