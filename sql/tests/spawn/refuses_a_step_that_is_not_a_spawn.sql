-- A spawn under a step name already checkpointed by save_step is refused
-- (QC106) rather than answering no child.
begin;
select plan(2);
\ir ../helpers.psql

select conductor.enqueue('parent', '{}', 'spawn-clash') as t \gset
select conductor_tests.claim_one('spawn-clash') as a \gset
select conductor.save_step(:a, 'charge', '{"paid": true}') as saved \gset

select throws_ok(format($$select conductor.spawn(%s, 'charge', 'child')$$, :a), 'QC106', NULL,
  'A spawn under a step name that holds another checkpoint is refused.');
select is((select count(*)::int from conductor.tasks where parent_id = :t), 0,
  'No child was enqueued.');

select * from finish();
rollback;
