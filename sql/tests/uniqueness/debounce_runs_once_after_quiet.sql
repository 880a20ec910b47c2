-- debounce: each enqueue of the key while the holder is queued gives it the payload and moves
-- its run_at to now + debounce, never past the first enqueue + debounce_max.
begin;
select plan(9);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('reindex', '{"v": 1}', 'ud-q', dedupe_key => 'ix:1',
                         debounce => '10 seconds', debounce_max => '1 minute') as t \gset
select is((select (run_at, debounce_until) from conductor.tasks where id = :t),
  ('2030-01-01 00:00:10+00'::timestamptz, '2030-01-01 00:01:00+00'::timestamptz),
  'The first enqueue waits for the quiet period; its latest start is first enqueue + debounce_max.');

set local conductor.fake_now = '2030-01-01 00:00:05+00';
select is(conductor.enqueue('reindex', '{"v": 2}', 'ud-q', dedupe_key => 'ix:1',
                            debounce => '10 seconds', debounce_max => '1 minute'), :t::bigint,
  'An enqueue within the quiet period returns the same task');
select is((select (payload, run_at) from conductor.tasks where id = :t),
  ('{"v": 2}'::jsonb, '2030-01-01 00:00:15+00'::timestamptz), 'with the last payload and the quiet period restarted.');
select is((select count(*) from conductor.claim('w', array['ud-q'], 1, '60 s')), 0::bigint,
  'It is not claimed during the quiet period.');

set local conductor.fake_now = '2030-01-01 00:00:55+00';
select conductor.enqueue('reindex', '{"v": 3}', 'ud-q', dedupe_key => 'ix:1',
                         debounce => '10 seconds', debounce_max => '1 minute') as again \gset
select is((select run_at from conductor.tasks where id = :t), '2030-01-01 00:01:00+00'::timestamptz,
  'A steady stream cannot push it past first enqueue + debounce_max.');

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select is((select payload from conductor.claim('w', array['ud-q'], 1, '60 s')), '{"v": 3}'::jsonb,
  'At its run_at it runs once, with the last payload.');
select is((select count(*) from conductor.tasks where queue = 'ud-q'), 1::bigint, 'One task for the burst.');

-- after it started, the next enqueue starts a new debounce
select conductor.enqueue('reindex', '{"v": 4}', 'ud-q', dedupe_key => 'ix:1',
                         debounce => '10 seconds', debounce_max => '1 minute') as next \gset
select isnt(:next::bigint, :t::bigint, 'An enqueue after the start writes a new task');
select is((select (payload, run_at, debounce_until) from conductor.tasks where id = :next),
  ('{"v": 4}'::jsonb, '2030-01-01 00:01:10+00'::timestamptz, '2030-01-01 00:02:00+00'::timestamptz),
  'with its own quiet period and maximum.');

select * from finish();
rollback;
