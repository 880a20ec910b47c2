-- A limit on a kind holds across queues and workers, and holds back only that kind: the
-- other kinds of the queue, ahead of or behind its tasks, are claimed as if it were not
-- there, and once its bucket is dry a claim passes its tasks over (they do not take a
-- claim's places). A worker serving only a dry kind gets nothing at once.
begin;
select plan(8);
\ir ../helpers.psql
set local conductor.fake_now = '2032-02-01 00:00:00+00';

select conductor.set_rate_limit(kind => 'rl-A', per_second => 2, burst => 2) as s \gset
select conductor.enqueue('rl-A', '{}', 'rl-kind') as a1 \gset
select conductor.enqueue('rl-A', '{}', 'rl-kind') as a2 \gset
select conductor.enqueue('rl-A', '{}', 'rl-kind') as a3 \gset
select conductor.enqueue('rl-B', '{}', 'rl-kind') as b1 \gset
select conductor.enqueue('rl-A', '{}', 'rl-kind') as a4 \gset
select conductor.enqueue('rl-B', '{}', 'rl-kind') as b2 \gset
select conductor.enqueue('rl-A', '{}', 'rl-kind-2') as a5 \gset

select results_eq($$select task_id from conductor.claim('w1', array['rl-kind'], 10) order by task_id$$,
  format('values (%s::bigint), (%s::bigint), (%s::bigint), (%s::bigint)', :a1, :a2, :b1, :b2),
  'Two tasks of the limited kind (its burst) and every task of the other kind start.');
select results_eq(format('select status::text, attempt from conductor.tasks where id in (%s, %s) order by id', :a3, :a4),
  $$values ('queued'::text, 0), ('queued', 0)$$,
  'The limited kind''s others stay queued, never attempted.');

select conductor.enqueue('rl-B', '{}', 'rl-kind', priority => -1) as b3 \gset
select results_eq($$select task_id from conductor.claim('w1', array['rl-kind'], 1)$$,
  format('values (%s::bigint)', :b3),
  'With the kind''s bucket dry, a claim of one passes its tasks over and takes the other kind''s, though behind them.');
select is_empty($$select * from conductor.claim('w2', array['rl-kind-2'], 10)$$,
  'The kind''s limit holds in another queue and for another worker.');
select is_empty($$select * from conductor.claim('w2', null, 10, kinds => array['rl-A'])$$,
  'A worker serving only the dry kind gets nothing.');

set local conductor.fake_now = '2032-02-01 00:00:00.5+00';
select results_eq($$select task_id from conductor.claim('w2', null, 1000000) where kind like 'rl-%'$$,
  format('values (%s::bigint)', :a3),
  'Half a second later one token: the first of the kind in claim order starts, from any queue.');
select results_eq($$select tokens, refilled_at from conductor.rate_limits where scope = 'kind' and name = 'rl-A'$$,
  $$values (0::double precision, '2032-02-01 00:00:00.5+00'::timestamptz)$$,
  'The kind''s bucket holds what is left, refilled at the claim''s time.');
select is((select count(*) from conductor.rate_limits where scope = 'queue' and name in ('rl-kind', 'rl-kind-2')), 0::bigint,
  'The queues themselves have no limit.');

select * from finish();
rollback;
