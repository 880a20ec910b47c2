-- Buckets per key come and go: reap() forgets the ones full again (a missing row is a full
-- bucket), keeps a dry one; switching a limit to one bucket or removing it deletes its
-- keys' buckets; setting the same per-key limit again changes nothing; spawn and
-- enqueue_many carry rate_key.
begin;
select plan(8);
\ir ../helpers.psql
set local conductor.fake_now = '2032-03-03 00:00:00+00';

select conductor.set_rate_limit(queue => 'rk-f', per_second => 1, burst => 2, per_key => true) as s \gset
select count(*) as n from conductor.enqueue_many(
  '[{"kind": "k", "queue": "rk-f", "rate_key": "a"}, {"kind": "k", "queue": "rk-f", "rate_key": "a"},
    {"kind": "k", "queue": "rk-f", "rate_key": "b"}, {"kind": "k", "queue": "rk-f", "rate_key": "a"}]') \gset
select is((select count(*) from conductor.tasks where queue = 'rk-f' and rate_key = 'a'), 3::bigint,
  'enqueue_many stores rate_key.');
select is((select count(*) from conductor.claim('w', array['rk-f'], 10)), 3::bigint,
  'Key a starts 2 (its burst), key b 1.');
select results_eq($$select key, tokens from conductor.rate_key_buckets where name = 'rk-f' order by key$$,
  $$values ('a'::text, 0::double precision), ('b', 1)$$, 'a is dry, b holds one token.');

set local conductor.fake_now = '2032-03-03 00:00:01+00';
select is(conductor._forget_rate_keys(100), 1, 'A second later b is full again and forgotten; a (1 of 2) is kept.');
select results_eq($$select key from conductor.rate_key_buckets where name = 'rk-f'$$, $$values ('a'::text)$$,
  'Only a''s bucket is left.');

select conductor.set_rate_limit(queue => 'rk-f', per_second => 1, burst => 2, per_key => true) as again \gset
select is((select count(*) from conductor.rate_key_buckets where name = 'rk-f'), 1::bigint,
  'The same per-key limit set again keeps the buckets.');
select conductor.set_rate_limit(queue => 'rk-f', per_second => 1, burst => 2) as one_bucket \gset
select is((select count(*) from conductor.rate_key_buckets where name = 'rk-f'), 0::bigint,
  'Switched to one bucket, the keys'' buckets go.');
select conductor.set_rate_limit(queue => 'rk-f', per_second => 1, per_key => true) as s2 \gset
select count(*) as c from conductor.claim('w', array['rk-f'], 10) \gset
select conductor.set_rate_limit(queue => 'rk-f') as removed \gset
select is((select count(*) from conductor.rate_key_buckets where name = 'rk-f'), 0::bigint,
  'Removing a per-key limit deletes its buckets.');

select * from finish();
rollback;
