-- When two full claim scans in a row are slow (dead index entries at the head: a pinned xmin
-- horizon), the session claims from the position after its last task: higher priorities first,
-- then after the position; a claim that finds too few there scans in full for the rest; an
-- expired or foreign position is not used; a first slow scan leaves only a strike; fast scans
-- remember nothing. conductor.settings.claim_slow_scan = 0 makes every scan count as slow.
begin;
select plan(18);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';
update conductor.settings set claim_slow_scan = '0';

select array_agg(conductor.enqueue('k', jsonb_build_object('n', n), 'pos') order by n) as ids
  from generate_series(1, 6) n \gset
select (:'ids'::bigint[])[1] as t1, (:'ids'::bigint[])[2] as t2, (:'ids'::bigint[])[3] as t3,
       (:'ids'::bigint[])[4] as t4, (:'ids'::bigint[])[5] as t5, (:'ids'::bigint[])[6] as t6 \gset

select results_eq($$select task_id from conductor.claim('w', array['pos'], 1)$$,
  format('values (%s::bigint)', :t1), 'A full scan claims the first.');
select is(current_setting('conductor.claim_position'), 'pos|slow',
  'One slow scan leaves a strike, not a position (a paused backend is slow once too).');
select results_eq($$select task_id from conductor.claim('w', array['pos'], 1)$$,
  format('values (%s::bigint)', :t2), 'The next full scan claims the second.');
select matches(current_setting('conductor.claim_position'), format('^pos\|0\|\d+\|%s\|[0-9.]+$', :t2),
  'The second slow scan in a row left the position after the last task claimed: queues, priority, run_at, id, until.');

select conductor.enqueue('k', '{"urgent": true}', 'pos', priority => 5) as urgent \gset
select conductor.enqueue('k', '{"behind": true}', 'pos', run_at => '2029-12-31 23:00:00+00') as behind \gset
select results_eq($$select task_id from conductor.claim('w', array['pos'], 2)$$,
  format('values (%s::bigint), (%s)', :urgent, :t3),
  'From the position: a task of higher priority first, then the tasks after the position.');
select matches(current_setting('conductor.claim_position'), format('^pos\|0\|\d+\|%s\|', :t3),
  'The position moves to the last task claimed (t3, not the higher-priority one claimed first).');
select results_eq($$select task_id from conductor.claim('w', array['pos'], 2)$$,
  format('values (%s::bigint), (%s)', :t4, :t5),
  'A task behind the position at its priority is passed over while the position holds.');
select results_eq($$select task_id from conductor.claim('w', array['pos'], 5)$$,
  format('values (%s::bigint), (%s)', :behind, :t6),
  'Too few after the position: a full scan finds the rest, in claim order.');
select matches(current_setting('conductor.claim_position'), format('^pos\|0\|\d+\|%s\|', :t6),
  'The position is after the last task in claim order, though the full scan found its own last one later.');

select conductor.enqueue('k', '{"n": 7}', 'pos') as t7 \gset
select conductor.enqueue('k', '{"urgent": 2}', 'pos', priority => 5) as urgent2 \gset
select set_config('conductor.claim_position',
  regexp_replace(current_setting('conductor.claim_position'), '[0-9.]+$', '1'), false) as expired \gset
select results_eq($$select task_id from conductor.claim('w', array['pos'], 1)$$,
  format('values (%s::bigint)', :urgent2), 'An expired position is not used: the exact order again.');

select conductor.enqueue('k', '{"n": 8}', 'pos') as t8 \gset
select conductor.enqueue('k', '{"urgent": 3}', 'pos', priority => 5) as urgent3 \gset
select results_eq($$select task_id from conductor.claim('w', null, 1)$$,
  format('values (%s::bigint)', :urgent3), 'A position of other queues is not used.');
select is(current_setting('conductor.claim_position'), '*|slow',
  'The claim of every queue keeps its own record: a first slow scan, a strike.');
select results_eq($$select task_id from conductor.claim('w', null, 1)$$,
  format('values (%s::bigint)', :t7), 'Its second slow scan claims in order');
select matches(current_setting('conductor.claim_position'), format('^\*\|0\|\d+\|%s\|', :t7),
  'and remembers its own position.');

select set_config('conductor.claim_position', 'elsewhere|x|1|2|9999999999', false) as garbage \gset
select lives_ok($$select * from conductor.claim('w', array['elsewhere'], 1)$$,
  'A malformed position (set by hand) is ignored, not an error.');
update conductor.settings set claim_slow_scan = default;
select results_eq($$select task_id from conductor.claim('w', array['pos'], 1)$$,
  format('values (%s::bigint)', :t8), 'With fast scans the claim is in exact order.');
select is(current_setting('conductor.claim_position'), '', 'and forgets the position.');

select is((select count(*) from conductor.tasks where queue = 'pos' and status = 'running'), 12::bigint,
  'No task was claimed twice.');

select * from finish();
rollback;
