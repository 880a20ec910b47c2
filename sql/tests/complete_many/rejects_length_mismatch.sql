-- complete_many raises QC106 when results and attempt_ids differ in length, and changes nothing.
begin;
select plan(3);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'many-len') as t1 \gset
select conductor_tests.claim_one('many-len') as a1 \gset
select conductor_tests.task(:t1) as before \gset

select throws_ok(format($$select * from conductor.complete_many(array[%s]::bigint[], array['{}', '{}']::jsonb[])$$, :a1),
  'QC106', 'complete_many got 1 attempt ids and 2 results; give one result per attempt, or NULL for none',
  'Two results for one attempt are refused with QC106.');
select throws_ok(format($$select * from conductor.complete_many(array[%s]::bigint[], '{}'::jsonb[])$$, :a1),
  'QC106', NULL,
  'An empty results array for one attempt is refused with QC106.');
select is(conductor_tests.task(:t1), :'before'::jsonb, 'The task is still running, unchanged.');

select * from finish();
rollback;
