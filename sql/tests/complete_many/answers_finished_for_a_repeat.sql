-- A batch sent twice (the answer to the first was lost with the connection) is
-- answered 'finished' the second time, and the stored results do not change.
begin;
select plan(2);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'many-repeat') as t1 \gset
select conductor_tests.claim_one('many-repeat') as a1 \gset
select count(*) from conductor.complete_many(array[:a1]::bigint[], array['{"r": 1}']::jsonb[]);

select results_eq(
  format($$select attempt_id, task_id, state from conductor.complete_many(array[%s]::bigint[], array['{"r": 2}']::jsonb[])$$, :a1),
  format($$values (%s::bigint, %s::bigint, 'finished'::text)$$, :a1, :t1),
  'The second sending of the same attempt is answered ''finished''.');
select is((select result from conductor.tasks where id = :t1), '{"r": 1}'::jsonb,
  'The result stored by the first sending stays.');

select * from finish();
rollback;
