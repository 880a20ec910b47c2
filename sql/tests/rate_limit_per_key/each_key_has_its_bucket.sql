-- A per-key limit of a queue gives each rate_key of its tasks a bucket of its own:
-- each key starts at most its burst, a task without a rate_key is not limited by it,
-- the buckets are rows made full on first use, and half a second later each key has
-- one token again (the fake clock).
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2032-03-01 00:00:00+00';

select conductor.set_rate_limit(queue => 'rk-q', per_second => 2, burst => 2, per_key => true) as s \gset
select conductor.enqueue('k', '{}', 'rk-q', rate_key => 'acme') as a1 \gset
select conductor.enqueue('k', '{}', 'rk-q', rate_key => 'acme') as a2 \gset
select conductor.enqueue('k', '{}', 'rk-q', rate_key => 'acme') as a3 \gset
select conductor.enqueue('k', '{}', 'rk-q', rate_key => 'acme') as a4 \gset
select conductor.enqueue('k', '{}', 'rk-q', rate_key => 'bolt') as b1 \gset
select conductor.enqueue('k', '{}', 'rk-q', rate_key => 'bolt') as b2 \gset
select conductor.enqueue('k', '{}', 'rk-q') as n1 \gset
select conductor.enqueue('k', '{}', 'rk-q') as n2 \gset
select conductor.enqueue('k', '{}', 'rk-q') as n3 \gset

select is((select per_key from conductor.rate_limits where scope = 'queue' and name = 'rk-q'), true,
  'set_rate_limit(per_key => true) stores a limit per key.');
select results_eq($$select task_id from conductor.claim('w1', array['rk-q'], 100) order by task_id$$,
  format('values (%s::bigint), (%s::bigint), (%s::bigint), (%s::bigint), (%s::bigint), (%s::bigint), (%s::bigint)',
         :a1, :a2, :b1, :b2, :n1, :n2, :n3),
  'Each key starts its burst (2), and every task without a rate_key starts.');
select results_eq(format('select status::text, attempt from conductor.tasks where id in (%s, %s) order by id', :a3, :a4),
  $$values ('queued'::text, 0), ('queued', 0)$$,
  'The key''s others stay queued, never attempted.');
select results_eq($$select key, tokens, refilled_at from conductor.rate_key_buckets where scope = 'queue' and name = 'rk-q' order by key$$,
  $$values ('acme'::text, 0::double precision, '2032-03-01 00:00:00+00'::timestamptz),
           ('bolt', 0, '2032-03-01 00:00:00+00')$$,
  'Each key has a bucket row, made full on first use and drawn from.');
select is((select tokens from conductor.rate_limits where scope = 'queue' and name = 'rk-q'), 2::double precision,
  'The limit''s own row is not drawn from.');

select conductor.enqueue('k', '{}', 'rk-q', rate_key => 'bolt') as b3 \gset
set local conductor.fake_now = '2032-03-01 00:00:00.5+00';
select results_eq($$select task_id from conductor.claim('w2', array['rk-q'], 100) order by task_id$$,
  format('values (%s::bigint), (%s::bigint)', :a3, :b3),
  'Half a second later each key has one token: one of each starts.');
select is((select count(*) from conductor.tasks where queue = 'rk-q' and status = 'queued'), 1::bigint,
  'The last acme task waits for the next token.');

select * from finish();
rollback;
