-- A cap and a rate limit on one queue: the cap trims first, so a task the cap leaves out
-- draws no token.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2032-07-03 00:00:00+00';

select count(*) from (select conductor.enqueue('k', '{}', 'ql-both') from generate_series(1, 10)) e \gset
select conductor.set_queue_limit('ql-both', 2) as s \gset
select conductor.set_rate_limit(queue => 'ql-both', per_second => 1, burst => 5) as s \gset
select is((select count(*) from conductor.claim('w1', array['ql-both'], 10)), 2::bigint,
  'Under a cap of 2 and a bucket of 5, a claim of 10 starts 2.');
select is((select floor(tokens)::int from conductor.rate_limits where name = 'ql-both'), 3,
  'Only the 2 started drew tokens: 3 are left.');
select is((select count(*) from conductor.claim('w1', array['ql-both'], 10)), 0::bigint,
  'With the cap full, nothing starts and no token is drawn.');
select is((select floor(tokens)::int from conductor.rate_limits where name = 'ql-both'), 3, 'Still 3 tokens.');

select * from finish();
rollback;
