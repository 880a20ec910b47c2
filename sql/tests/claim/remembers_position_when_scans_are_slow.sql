-- When two full claim scans in a row are slow (dead index entries at the head: a pinned xmin
-- horizon), the worker's claims go on from the position after its last task: higher priorities
-- first, then after the position; a claim that finds too few there scans in full for the rest; an
-- expired or foreign position is not used; a first slow scan leaves only a strike; fast scans
-- remember nothing. The position is a row of conductor.claim_positions keyed by worker_id, not
-- session state (issue 19: a transaction-mode pooler hands one session to many clients).
-- conductor.settings.claim_slow_scan = 0 makes every scan count as slow.
begin;
select plan(22);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';
update conductor.settings set claim_slow_scan = '0';

-- the newest row of a worker, as text: scope|priority|run_at (us)|task|until, or scope|slow for a strike
create function conductor_tests.pos(w text) returns text language sql stable as $$
  select coalesce((select case when p.task_id is null then p.scope || '|slow'
                               else concat_ws('|', p.scope, p.priority, (extract(epoch from p.run_at) * 1000000)::bigint,
                                              p.task_id, p.until) end
                     from conductor.claim_positions p where p.worker_id = w order by p.seq desc limit 1), '')
$$;

select array_agg(conductor.enqueue('k', jsonb_build_object('n', n), 'pos') order by n) as ids
  from generate_series(1, 6) n \gset
select (:'ids'::bigint[])[1] as t1, (:'ids'::bigint[])[2] as t2, (:'ids'::bigint[])[3] as t3,
       (:'ids'::bigint[])[4] as t4, (:'ids'::bigint[])[5] as t5, (:'ids'::bigint[])[6] as t6 \gset

select results_eq($$select task_id from conductor.claim('w', array['pos'], 1)$$,
  format('values (%s::bigint)', :t1), 'A full scan claims the first.');
select is(conductor_tests.pos('w'), 'pos|slow',
  'One slow scan leaves a strike, not a position (a paused backend is slow once too).');
select results_eq($$select task_id from conductor.claim('w', array['pos'], 1)$$,
  format('values (%s::bigint)', :t2), 'The next full scan claims the second.');
select matches(conductor_tests.pos('w'), format('^pos\|0\|\d+\|%s\|[0-9.]+$', :t2),
  'The second slow scan in a row left the position after the last task claimed: queues, priority, run_at, id, until.');
select is((select count(*) from conductor.claim_positions where worker_id = 'w'), 1::bigint,
  'The new position replaced the strike: one row for the worker.');

select conductor.enqueue('k', '{"urgent": true}', 'pos', priority => 5) as urgent \gset
select conductor.enqueue('k', '{"behind": true}', 'pos', run_at => '2029-12-31 23:00:00+00') as behind \gset
select results_eq($$select task_id from conductor.claim('w', array['pos'], 2)$$,
  format('values (%s::bigint), (%s)', :urgent, :t3),
  'From the position: a task of higher priority first, then the tasks after the position.');
select matches(conductor_tests.pos('w'), format('^pos\|0\|\d+\|%s\|', :t3),
  'The position moves to the last task claimed (t3, not the higher-priority one claimed first).');

-- another worker on the same queue has a memory of its own (and this session's setting is nothing)
set conductor.claim_position = 'pos|0|0|0|9999999999';
select results_eq($$select task_id from conductor.claim('w2', array['pos'], 1)$$,
  format('values (%s::bigint)', :behind),
  'A second worker''s claim is a full scan in exact order: it takes the task behind the first worker''s position, and a caller''s SET conductor.claim_position changes nothing.');
select is(conductor_tests.pos('w2'), 'pos|slow', 'The second worker got a strike of its own');
select matches(conductor_tests.pos('w'), format('^pos\|0\|\d+\|%s\|', :t3), 'and the first worker''s position is untouched.');
reset conductor.claim_position;
select conductor.enqueue('k', '{"behind": 2}', 'pos', run_at => '2029-12-31 23:00:00+00') as behind \gset

select results_eq($$select task_id from conductor.claim('w', array['pos'], 2)$$,
  format('values (%s::bigint), (%s)', :t4, :t5),
  'A task behind the position at its priority is passed over while the position holds.');
select results_eq($$select task_id from conductor.claim('w', array['pos'], 5)$$,
  format('values (%s::bigint), (%s)', :behind, :t6),
  'Too few after the position: a full scan finds the rest, in claim order.');
select matches(conductor_tests.pos('w'), format('^pos\|0\|\d+\|%s\|', :t6),
  'The position is after the last task in claim order, though the full scan found its own last one later.');

-- a task of higher priority than the position still comes first
select conductor.enqueue('k', '{"urgent": 9}', 'pos', priority => 5) as urgent9 \gset
select results_eq($$select task_id from conductor.claim('w', array['pos'], 1)$$,
  format('values (%s::bigint)', :urgent9), 'Higher priorities still come first from a position.');

select conductor.enqueue('k', '{"n": 7}', 'pos') as t7 \gset
select conductor.enqueue('k', '{"urgent": 2}', 'pos', priority => 5) as urgent2 \gset
update conductor.claim_positions set until = 1 where worker_id = 'w';
select results_eq($$select task_id from conductor.claim('w', array['pos'], 1)$$,
  format('values (%s::bigint)', :urgent2), 'An expired position is not used: the exact order again.');

select conductor.enqueue('k', '{"n": 8}', 'pos') as t8 \gset
select conductor.enqueue('k', '{"urgent": 3}', 'pos', priority => 5) as urgent3 \gset
select results_eq($$select task_id from conductor.claim('w', null, 1)$$,
  format('values (%s::bigint)', :urgent3), 'A position of other queues is not used.');
select is(conductor_tests.pos('w'), '*|slow',
  'The claim of every queue keeps its own record: a first slow scan, a strike.');
select results_eq($$select task_id from conductor.claim('w', null, 1)$$,
  format('values (%s::bigint)', :t7), 'Its second slow scan claims in order');
select matches(conductor_tests.pos('w'), format('^\*\|0\|\d+\|%s\|', :t7),
  'and remembers its own position.');

update conductor.settings set claim_slow_scan = default;
select results_eq($$select task_id from conductor.claim('w', array['pos'], 1)$$,
  format('values (%s::bigint)', :t8), 'With fast scans the claim is in exact order');
select is((select count(*) from conductor.claim_positions where worker_id = 'w'), 0::bigint,
  'and the worker''s rows are gone.');

select is((select count(*) from conductor.tasks where queue = 'pos' and status = 'running'), 14::bigint,
  'No task was claimed twice.');

select * from finish();
rollback;
