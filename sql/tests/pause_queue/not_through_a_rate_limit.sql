-- A worker login cannot pause a queue through a rate limit (issue 25). v0.2.0: as
-- conductor_worker, set_rate_limit(queue => ..., per_second => 1e-300, burst => 1) let one
-- claim through and then none, for good: a pause without pause_queue, which is an admin's.
-- Now the call is refused (QC106, settings.min_rate_limit) and the queue's tasks keep being
-- claimed; the slowest limit a worker login may set (the floor, 1 a second) still starts
-- one task every second. pause_queue records the caller (conductor._caller()).
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2032-07-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;
create role t_admin;
grant conductor_admin to t_admin;

select count(*) as n from (select conductor.enqueue('k', '{}', 'np-q') from generate_series(1, 5)) e \gset
set local role t_worker;
select throws_ok($$select conductor.set_rate_limit(queue => 'np-q', per_second => 1e-300, burst => 1)$$, 'QC106', NULL,
  'A worker login cannot set a limit of 1e-300 a second.');
reset role;
select is((select count(*) from conductor.claim('w1', array['np-q'], 2)), 2::bigint,
  'The queue is claimed as before: no limit was stored.');

set local role t_worker;
select conductor.set_rate_limit(queue => 'np-q', per_second => 1, burst => 1);
reset role;
select is((select count(*) from conductor.claim('w1', array['np-q'], 3)), 1::bigint,
  'At the floor, one start now...');
set local conductor.fake_now = '2032-07-01 00:00:01+00';
select is((select count(*) from conductor.claim('w1', array['np-q'], 3)), 1::bigint,
  '...and one a second later: slowed, never stopped.');

set local role t_admin;
select conductor.pause_queue('np-q') as paused \gset
reset role;
select is((select paused_by from conductor.paused_queues where queue = 'np-q'), 't_admin',
  'pause_queue (an admin''s) records the role that paused, conductor._caller().');
select is((select count(*) from conductor.claim('w1', array['np-q'], 3)), 0::bigint, 'And a paused queue is not claimed.');

select * from finish();
rollback;
