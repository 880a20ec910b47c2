-- spawn takes enqueue's dedupe options: two spawns (two steps) of one debounced key are one
-- child with the last payload; each step checkpoints that child's id.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('root', '{}', 'spawn-dedupe') as root \gset
select conductor_tests.claim_one('spawn-dedupe') as a \gset
select conductor.spawn(:a, 's1', 'reindex', '{"rev": 1}', 'spawn-dedupe-kids', dedupe_key => 'sd:1',
                       debounce => '10 seconds', debounce_max => '1 minute') as c1 \gset
select conductor.spawn(:a, 's2', 'reindex', '{"rev": 2}', 'spawn-dedupe-kids', dedupe_key => 'sd:1',
                       debounce => '10 seconds', debounce_max => '1 minute') as c2 \gset
select is(:c2::bigint, :c1::bigint, 'The second spawn of the debounced key returns the first child');
select is((select (payload, run_at, debounce_until, parent_id) from conductor.tasks where id = :c1),
  ('{"rev": 2}'::jsonb, '2030-01-01 00:00:10+00'::timestamptz, '2030-01-01 00:01:00+00'::timestamptz, :root::bigint),
  'which carries the last payload and waits for quiet.');
select is((select array_agg((result->>'task_id')::bigint order by name) from conductor.steps where task_id = :root),
  array[:c1::bigint, :c1::bigint], 'Both steps checkpoint that child.');
select throws_ok(format('select conductor.spawn(%s, %L, %L, dedupe_window => %L)', :a, 's3', 'reindex', '1 hour'),
  'QC120', null, 'A dedupe option without a dedupe_key is QC120 from spawn too.');

select * from finish();
rollback;
