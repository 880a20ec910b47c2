-- A key with tokens left takes no more places of a claim than its tokens: behind 30 tasks
-- of a key with 2 tokens, one claim of 5 starts 2 of them and the other keys' tasks
-- behind them; two claimers at the same time, both seeing the key's tokens, start the
-- key's 2 between them and the other keys' tasks too.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2032-03-07 00:00:00+00';

select conductor.set_rate_limit(queue => 'rk-head', per_second => 1, burst => 2, per_key => true) as s \gset
select count(conductor.enqueue('k', '{}', 'rk-head', rate_key => 'big', priority => 5)) as big
  from generate_series(1, 30) \gset
select conductor.enqueue('k', '{}', 'rk-head', rate_key => 'small') as s1 \gset
select conductor.enqueue('k', '{}', 'rk-head', rate_key => 'small') as s2 \gset
select conductor.enqueue('k', '{}', 'rk-head') as n1 \gset

select results_eq($$select t.rate_key, count(*) from conductor.claim('w1', array['rk-head'], 5) c
                     join conductor.tasks t on t.id = c.task_id group by t.rate_key order by t.rate_key$$,
  $$values ('big'::text, 2::bigint), ('small', 2), (null, 1)$$,
  'One claim of 5: big''s 2 tokens, small''s 2 and the task without a key, though 28 more of big stand before them.');

set local conductor.fake_now = '2032-03-07 00:00:02+00';
select conductor.enqueue('k', '{}', 'rk-head', rate_key => 'small') as s3 \gset
select is((select count(*) from conductor.claim('w1', array['rk-head'], 2)), 2::bigint,
  'Two seconds later a claim of 2 takes big''s 2 new tokens ...');
select results_eq($$select task_id from conductor.claim('w2', array['rk-head'], 2)$$,
  format('values (%s::bigint)', :s3), '... and the next one, big dry, small''s task behind 26 of big.');

select * from finish();
rollback;
