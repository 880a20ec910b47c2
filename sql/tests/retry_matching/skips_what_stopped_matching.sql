-- A failed task retried by hand between the preview and the bulk retry no longer matches:
-- retry_matching does not touch it again and counts only what it retried.
begin;
select plan(3);
\ir ../helpers.psql

select conductor.cancel(conductor.enqueue('k', '{}', 'bk-stop')) as n1 \gset
select conductor.enqueue('k', '{}', 'bk-stop') as t2 \gset
select conductor.cancel(:t2) as n2 \gset
select is((select matching from conductor.preview_matching('retry', queue => 'bk-stop')), 2::bigint, 'The preview counts 2.');
select conductor.retry(:t2) as r \gset
select conductor_tests.claim_one('bk-stop') as att \gset
select is(conductor.retry_matching(queue => 'bk-stop', expected => 2), 1, 'The bulk retry retries the 1 still matching.');
select is((select (status, attempt)::text from conductor.tasks where id = :t2), '(running,1)',
  'The task retried by hand and claimed since is left as it was.');

select * from finish();
rollback;
