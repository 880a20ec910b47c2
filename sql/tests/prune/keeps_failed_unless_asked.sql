-- Failed, dead and timed_out tasks are kept unless include_failed is true.
begin;
select plan(4);
\ir ../helpers.psql

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.enqueue('k', '{}', 'pr-f') as failed \gset
select conductor.fail(conductor_tests.claim_one('pr-f'), 'boom');
select conductor.enqueue('k', '{}', 'pr-f') as dead \gset
select conductor.fail(conductor_tests.claim_one('pr-f'), 'no handler', unknown_kind => true);
select conductor.enqueue('k', '{}', 'pr-f') as timed_out \gset
update conductor.tasks set status = 'timed_out', finished_at = conductor.now() where id = :timed_out;
set local conductor.fake_now = '2030-02-01 00:00:00+00';

select is(conductor.prune(interval '7 days'), 0::bigint,
  'Without include_failed nothing failed, dead or timed out is deleted.');
select is((select count(*) from conductor.tasks where id in (:failed, :dead, :timed_out)), 3::bigint,
  'The three tasks are still there.');
select is(conductor.prune(interval '7 days', include_failed => true), 3::bigint,
  'With include_failed the failed, dead and timed_out tasks go.');
select is((select count(*) from conductor.attempts where task_id in (:failed, :dead)), 0::bigint,
  'Their attempts (with the tracebacks) go with them.');

select * from finish();
rollback;
