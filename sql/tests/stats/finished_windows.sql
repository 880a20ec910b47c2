-- stats() counts tasks finished in the last 1, 5 and 15 minutes (failed and dead together),
-- ignores older history and cancelled tasks, and computes the failure rate over 15 minutes.
begin;
select plan(10);
\ir ../helpers.psql

create function pg_temp.finish_one(q text, how text, at timestamptz) returns void
  language plpgsql as $$
declare v_a bigint;
begin
  perform set_config('conductor.fake_now', at::text, true);
  perform conductor.enqueue('k', '{}', q);
  v_a := conductor_tests.claim_one(q);
  case how
    when 'ok' then perform conductor.complete(v_a, '{}');
    when 'fail' then perform conductor.fail(v_a, 'boom');
    when 'dead' then perform conductor.fail(v_a, 'no handler', unknown_kind => true);
  end case;
end $$;

-- now is 12:30
select pg_temp.finish_one('st-w', 'ok',   '2030-01-01 12:29:30+00');  -- 1m
select pg_temp.finish_one('st-w', 'ok',   '2030-01-01 12:27:00+00');  -- 5m
select pg_temp.finish_one('st-w', 'ok',   '2030-01-01 12:20:00+00');  -- 15m
select pg_temp.finish_one('st-w', 'ok',   '2030-01-01 12:10:00+00');  -- older: not counted
select pg_temp.finish_one('st-w', 'fail', '2030-01-01 12:29:50+00');  -- 1m
select pg_temp.finish_one('st-w', 'dead', '2030-01-01 12:22:00+00');  -- 15m
select pg_temp.finish_one('st-w', 'fail', '2030-01-01 11:00:00+00');  -- older: not counted
set local conductor.fake_now = '2030-01-01 12:28:00+00';
select conductor.enqueue('k', '{}', 'st-w') as c1 \gset
select conductor.cancel(:c1);
set local conductor.fake_now = '2030-01-01 12:30:00+00';

select is((select s.succeeded_1m from conductor.stats() s where s.queue = 'st-w'), 1::bigint,
  'One task succeeded in the last minute.');
select is((select s.succeeded_5m from conductor.stats() s where s.queue = 'st-w'), 2::bigint,
  'Two succeeded in the last 5 minutes (the 1-minute one included).');
select is((select s.succeeded_15m from conductor.stats() s where s.queue = 'st-w'), 3::bigint,
  'Three succeeded in the last 15 minutes; older history is not counted.');
select is((select s.failed_1m from conductor.stats() s where s.queue = 'st-w'), 1::bigint,
  'One task failed in the last minute.');
select is((select s.failed_5m from conductor.stats() s where s.queue = 'st-w'), 1::bigint,
  'One failed in the last 5 minutes.');
select is((select s.failed_15m from conductor.stats() s where s.queue = 'st-w'), 2::bigint,
  'Failed counts failed and dead tasks of the last 15 minutes.');
select is((select s.failure_rate from conductor.stats() s where s.queue = 'st-w'), 0.4::double precision,
  'The failure rate is failed / (succeeded + failed) over 15 minutes; cancelled counts in neither.');
select is((select s.ready + s.running + s.waiting + s.scheduled from conductor.stats() s where s.queue = 'st-w'), 0::bigint,
  'A queue with only finished tasks still has its row, with zero unfinished.');

set local conductor.fake_now = '2030-01-01 13:00:00+00';
select is((select count(*) from conductor.stats() s where s.queue = 'st-w'), 0::bigint,
  'A queue with nothing unfinished and nothing finished in 15 minutes has no row.');
set local conductor.fake_now = '2030-01-01 12:15:00+00';
select is((select s.succeeded_15m from conductor.stats() s where s.queue = 'st-w'), 1::bigint,
  'Tasks finished after the clock''s now are not counted.');

select * from finish();
rollback;
