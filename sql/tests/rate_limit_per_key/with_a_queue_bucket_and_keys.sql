-- A per-key limit of a kind and a one-bucket limit of the queue hold together: a task
-- starts on a token of both, and a task trimmed by one draws nothing from the other.
-- With concurrency keys in the claim (the keyed pick), a dry rate key's tasks are
-- trimmed after the pick: never more than the key's tokens start.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2032-03-06 00:00:00+00';

select conductor.set_rate_limit(queue => 'rk-both', per_second => 1, burst => 3) as q \gset
select conductor.set_rate_limit(kind => 'rk-both-kind', per_second => 1, burst => 1, per_key => true) as k \gset
select conductor.enqueue('rk-both-kind', '{}', 'rk-both', rate_key => 'a') as a1 \gset
select conductor.enqueue('rk-both-kind', '{}', 'rk-both', rate_key => 'a') as a2 \gset
select conductor.enqueue('rk-both-kind', '{}', 'rk-both', rate_key => 'b') as b1 \gset
select conductor.enqueue('rk-both-kind', '{}', 'rk-both', rate_key => 'c') as c1 \gset
select conductor.enqueue('rk-both-kind', '{}', 'rk-both', rate_key => 'd') as d1 \gset

select results_eq($$select task_id from conductor.claim('w', array['rk-both'], 10) order by task_id$$,
  format('values (%s::bigint), (%s::bigint), (%s::bigint)', :a1, :b1, :c1),
  'Each key starts one (its kind''s per-key burst), and the queue''s bucket stops the claim at 3.');
select is((select tokens from conductor.rate_limits where scope = 'queue' and name = 'rk-both'), 0::double precision,
  'The queue''s bucket gave 3: a2, trimmed by its key, drew none of it.');
select ok((select coalesce(min(tokens), 1) = 1 from conductor.rate_key_buckets where name = 'rk-both-kind' and key = 'd'),
  'd, trimmed by the queue''s bucket, drew no token of its key.');

-- concurrency keys in the same queue: the keyed pick, then the trim
select conductor.set_rate_limit(queue => 'rk-ck', per_second => 1, burst => 1, per_key => true) as ck \gset
select conductor.enqueue('k', '{}', 'rk-ck', rate_key => 'x') as x1 \gset
select conductor.enqueue('k', '{}', 'rk-ck', rate_key => 'x') as x2 \gset
select conductor.enqueue('k', '{}', 'rk-ck', concurrency_key => 'tenant', concurrency_limit => 5, rate_key => 'x') as x3 \gset
select is((select count(*) from conductor.claim('w', array['rk-ck'], 10)), 1::bigint,
  'With keyed tasks in the claim, key x still starts only its one token.');
select is((select count(*) from conductor.claim('w', array['rk-ck'], 10)), 0::bigint,
  'And nothing more at the same time.');

select * from finish();
rollback;
