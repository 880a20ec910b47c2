-- A worker whose row reap() deleted after a long silence shows again at its
-- next heartbeat.
begin;
select plan(2);

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.register_worker('w-quiet', host => 'h', pid => 1);
set local conductor.fake_now = '2030-01-01 01:00:00+00';
select conductor.reap();
select is((select count(*)::int from conductor.workers where id = 'w-quiet'), 0,
  'reap forgets a worker not seen for 15 minutes.');

select * from conductor.heartbeat('w-quiet', '{}'::bigint[]);
select is((select last_seen_at from conductor.workers where id = 'w-quiet'), '2030-01-01 01:00:00+00'::timestamptz,
  'Its next heartbeat records it again, seen now.');

select * from finish();
rollback;
