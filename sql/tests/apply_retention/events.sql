-- apply_retention deletes events emitted longer ago than settings.retain_events that no task
-- waits for, at most batch a call, as prune does; newer and awaited ones stay; a NULL
-- retain_events keeps them all.
begin;
select plan(7);
\ir ../helpers.psql

create role t_worker;
grant conductor_worker to t_worker;
update conductor.settings set retain_events = '10 days';

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.emit_event('ar-ev-old-1') as n \gset
select conductor.emit_event('ar-ev-old-2') as n \gset
select conductor.emit_event('ar-ev-old-3') as n \gset
select conductor.enqueue('k', '{}', 'ar-ev') as waiter \gset
select state from conductor.suspend(conductor_tests.claim_one('ar-ev'), 'approval', 'event', 'ar-ev-awaited') \gset
insert into conductor.events (name, payload, emitted_at) values ('ar-ev-awaited', '{}', conductor.now());
set local conductor.fake_now = '2030-01-05 00:00:00+00';
select conductor.emit_event('ar-ev-new') as n \gset

set local conductor.fake_now = '2030-01-12 00:00:00+00';
-- the reaper would have confirmed them long ago (prune/keeps_pending_events.sql: until then they stay)
update conductor.events set pending = false;
set local role t_worker;
select results_eq($$select what, deleted from conductor.apply_retention(batch => 2)$$,
  $$values ('succeeded_runs', 0::bigint), ('failed_runs', 0::bigint), ('events', 2::bigint), ('exclusive_locks', 0::bigint)$$,
  'Eleven days on, a batch of two old events goes.');
select results_eq($$select what, deleted from conductor.apply_retention(batch => 2)$$,
  $$values ('succeeded_runs', 0::bigint), ('failed_runs', 0::bigint), ('events', 1::bigint), ('exclusive_locks', 0::bigint)$$,
  'The next call takes the third.');
select results_eq($$select what, deleted from conductor.apply_retention(batch => 2)$$,
  $$values ('succeeded_runs', 0::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'Then none is left.');
reset role;
select is((select count(*)::int from conductor.events where name = 'ar-ev-new'), 1, 'An event 7 days old stays.');
select is((select count(*)::int from conductor.events where name = 'ar-ev-awaited'), 1,
  'An old event that a task waits for stays.');

update conductor.settings set retain_events = null;
set local conductor.fake_now = '2040-01-01 00:00:00+00';
set local role t_worker;
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 0::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'With retain_events NULL no event goes, however old.');
reset role;
select is((select count(*)::int from conductor.events where name = 'ar-ev-new'), 1, 'The newer event is still there.');

select * from finish();
rollback;
