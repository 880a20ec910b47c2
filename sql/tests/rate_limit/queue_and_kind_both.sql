-- A task limited by its queue and by its kind starts only with a token from both, and draws
-- one from each: a queue limited to 3 holding tasks of a kind limited to 2 (A) and of
-- another (B) starts A, A, B in claim order (the third A finds no kind token and draws no
-- queue token); the kind's limit then holds in another queue, whose other kinds run.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2032-03-01 00:00:00+00';

select conductor.set_rate_limit(queue => 'rl-both', per_second => 3, burst => 3) as s1 \gset
select conductor.set_rate_limit(kind => 'rl-A', per_second => 2, burst => 2) as s2 \gset
select conductor.enqueue('rl-A', '{}', 'rl-both', priority => 9) as a1 \gset
select conductor.enqueue('rl-A', '{}', 'rl-both', priority => 8) as a2 \gset
select conductor.enqueue('rl-A', '{}', 'rl-both', priority => 7) as a3 \gset
select conductor.enqueue('rl-B', '{}', 'rl-both', priority => 6) as b1 \gset
select conductor.enqueue('rl-B', '{}', 'rl-both', priority => 5) as b2 \gset
select conductor.enqueue('rl-A', '{}', 'rl-other') as a4 \gset
select conductor.enqueue('rl-B', '{}', 'rl-other') as b3 \gset

select results_eq($$select task_id from conductor.claim('w1', array['rl-both'], 10)$$,
  format('values (%s::bigint), (%s::bigint), (%s::bigint)', :a1, :a2, :b1),
  'A, A (the kind''s two tokens), then B (the queue''s third): the third A finds no kind token.');
select results_eq($$select scope, tokens from conductor.rate_limits where name in ('rl-both', 'rl-A') order by scope$$,
  $$values ('kind'::text, 0::double precision), ('queue', 0)$$,
  'Both buckets are empty: each kept task drew from both of its buckets.');
select is((select count(*) from conductor.tasks where id in (:a3, :b2) and status = 'queued' and attempt = 0), 2::bigint,
  'The third A and the second B stay queued.');
select results_eq($$select task_id from conductor.claim('w1', array['rl-other', 'rl-both'], 10)$$,
  format('values (%s::bigint)', :b3),
  'Elsewhere the kind''s limit still holds and the queue''s does not apply: only the other queue''s B starts.');

set local conductor.fake_now = '2032-03-01 00:00:00.5+00';
select results_eq($$select task_id from conductor.claim('w1', array['rl-both'], 10)$$,
  format('values (%s::bigint)', :a3),
  'Half a second later (1.5 queue tokens, 1 kind token) the third A starts, and only it.');
select is((select pg_catalog.round(tokens::numeric, 6) from conductor.rate_limits where scope = 'queue' and name = 'rl-both'), 0.5,
  'The queue''s half token is kept for later.');

select * from finish();
rollback;
