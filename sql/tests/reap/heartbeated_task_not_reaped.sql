-- A task whose worker heartbeats is not reaped, though its first lease would have expired.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('long', '{}', 'hb-reap-q') as t \gset
select conductor_tests.claim_one('hb-reap-q', 'w1', '60 seconds') as a \gset

set local conductor.fake_now = '2030-01-01 00:00:50+00';
select is_empty(format('select * from conductor.heartbeat(%L, array[%s]::bigint[])', 'w1', :a), 'The worker beats at 50 s.');
set local conductor.fake_now = '2030-01-01 00:01:30+00';
select is(conductor.reap(), 0, 'At 90 s, past the first lease, reap takes nothing.');
select is((select (status, attempt_id, recoveries)::text from conductor.tasks where id = :t), format('(running,%s,0)', :a),
  'The task is still running under the same attempt, no recovery counted.');

select * from finish();
rollback;
