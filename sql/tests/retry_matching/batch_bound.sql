-- retry_matching retries at most batch tasks per call, newest first, through retry itself
-- (fresh counts, due now); a caller calls again until it returns 0.
begin;
select plan(6);
\ir ../helpers.psql

set local conductor.fake_now = '2031-02-01 00:00:00+00';
select count(conductor.cancel(conductor.enqueue('k', jsonb_build_object('n', n), 'bk-batch'))) as staged
  from generate_series(1, 5) n \gset
select max(id) as newest from conductor.tasks where queue = 'bk-batch' \gset

set local conductor.fake_now = '2031-02-01 00:05:00+00';
select is(conductor.retry_matching(queue => 'bk-batch', batch => 2), 2, 'The first call retries 2, its batch.');
select is((select array_agg(status::text order by id desc) from conductor.tasks where queue = 'bk-batch'),
  array['queued', 'queued', 'cancelled', 'cancelled', 'cancelled'], 'The newest two.');
select is((select (run_at, error, finished_at)::text from conductor.tasks where id = :newest),
  '("2031-02-01 00:05:00+00",,)', 'retry''s own rules: due now, error and finished_at cleared.');
select is(conductor.retry_matching(queue => 'bk-batch', batch => 2), 2, 'The second call retries the next 2.');
select is(conductor.retry_matching(queue => 'bk-batch', batch => 2), 1, 'The third the last one.');
select is(conductor.retry_matching(queue => 'bk-batch', batch => 2), 0, 'Then nothing matches: 0.');

select * from finish();
rollback;
