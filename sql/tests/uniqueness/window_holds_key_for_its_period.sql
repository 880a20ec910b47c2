-- dedupe_window: a task holds its key, after it succeeded too, until the end of its aligned
-- period (date_bin on 2000-01-01 UTC); the next period's enqueue writes a new task.
begin;
select plan(8);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 10:05:00+00';

select conductor.enqueue('digest', '{"n": 1}', 'uw-q', dedupe_key => 'digest:u1',
                         dedupe_window => '1 hour') as first \gset
select is((select (dedupe_states::text[], dedupe_until) from conductor.tasks where id = :first),
  (array['queued', 'running', 'waiting', 'succeeded'], '2030-01-01 11:00:00+00'::timestamptz),
  'A window with no states holds in the unfinished statuses and succeeded, until the period ends.');

select conductor.enqueue('digest', '{"n": 2}', 'uw-q', dedupe_key => 'digest:u1',
                         dedupe_window => '1 hour') as again \gset
select is(:again::bigint, :first::bigint, 'While it is queued, the key returns the holder.');

select conductor_tests.claim_one('uw-q') as a1 \gset
select conductor.complete(:a1, '{}') as done \gset
set local conductor.fake_now = '2030-01-01 10:59:59+00';
select is(conductor.enqueue('digest', '{"n": 3}', 'uw-q', dedupe_key => 'digest:u1', dedupe_window => '1 hour'),
  :first::bigint, 'After it succeeded, the same period still returns it.');
select is((select payload from conductor.tasks where id = :first), '{"n": 1}'::jsonb,
  'and nothing was changed.');

set local conductor.fake_now = '2030-01-01 11:00:00+00';
select conductor.enqueue('digest', '{"n": 4}', 'uw-q', dedupe_key => 'digest:u1',
                         dedupe_window => '1 hour') as next_hour \gset
select isnt(:next_hour::bigint, :first::bigint, 'The next period writes a new task.');
select is((select dedupe_until from conductor.tasks where id = :next_hour), '2030-01-01 12:00:00+00'::timestamptz,
  'It holds the key until the end of its own period.');

-- a failed task of a window with default states does not hold
select conductor_tests.claim_one('uw-q') as a2 \gset
select conductor.fail(:a2, 'boom') as f \gset
select isnt(conductor.enqueue('digest', '{"n": 5}', 'uw-q', dedupe_key => 'digest:u1', dedupe_window => '1 hour'),
  :next_hour::bigint, 'A failed task does not hold its period (failed is not among the default states).');

-- a key without a window is another key space for finished holders
select is((select count(*) from conductor.tasks where dedupe_key = 'digest:u1'), 3::bigint,
  'Three tasks: one a period, and one after the failure.');

select * from finish();
rollback;
