-- replace => true updates a schedule of that name: an unchanged cron line and zone keep its
-- place (next_due_at, fire history), a changed line or zone restarts it from now.
begin;
select plan(8);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('r', '*/10 * * * *', 'k', '{"v": 1}') as c \gset
-- It fires at 00:10; at 00:17 its next due time is 00:20.
set local conductor.fake_now = '2030-01-01 00:10:00+00';
select count(*) from conductor.tick() \gset
set local conductor.fake_now = '2030-01-01 00:17:00+00';

select is(
  (select next_due_at from conductor.create_schedule('r', '*/10 * * * *', 'k', '{"v": 2}', priority => 5,
     replace => true)),
  '2030-01-01 00:20:00+00'::timestamptz,
  'Replacing with the same line and zone keeps next_due_at.');
select is(
  (select jsonb_build_object('payload', payload, 'priority', priority, 'last_due_at', last_due_at,
     'updated_at', updated_at, 'created_at', created_at) from conductor.schedules where name = 'r'),
  jsonb_build_object('payload', '{"v": 2}'::jsonb, 'priority', 5,
    'last_due_at', '2030-01-01 00:10:00+00'::timestamptz,
    'updated_at', '2030-01-01 00:17:00+00'::timestamptz,
    'created_at', '2030-01-01 00:00:00+00'::timestamptz),
  'The other fields are replaced, the last fire is kept, updated_at moves and created_at does not.');

set local conductor.fake_now = '2030-01-01 00:18:00+00';
select conductor.create_schedule('r', '*/10 * * * *', 'k', '{"v": 2}', priority => 5, replace => true) as c \gset
select is((select updated_at from conductor.schedules where name = 'r'), '2030-01-01 00:17:00+00'::timestamptz,
  'Replacing with an identical declaration (a worker restarting) leaves updated_at alone.');

set local conductor.fake_now = '2030-01-01 00:33:00+00';
select is(
  (select next_due_at from conductor.create_schedule('r', '*/10 * * * *', 'k', '{"v": 2}', priority => 5,
     replace => true)),
  '2030-01-01 00:20:00+00'::timestamptz,
  'An unchanged schedule keeps its place even when that due time has passed, so tick still fires it.');

select is(
  (select next_due_at from conductor.create_schedule('r', '0 * * * *', 'k', replace => true)),
  '2030-01-01 01:00:00+00'::timestamptz,
  'A changed line restarts from now: the next full hour, the missed 00:20 and 00:30 are dropped.');
select is(
  (select next_due_at from conductor.create_schedule('r', '0 * * * *', 'k', timezone => 'Asia/Kolkata',
     replace => true)),
  '2030-01-01 01:30:00+00'::timestamptz,
  'A changed zone restarts from now too: at 06:03 in Asia/Kolkata (UTC+5:30) the next full hour is 01:30 UTC.');
select is_empty(
  $$select * from conductor.tick() where schedule_name = 'r'$$,
  'After a restart nothing missed is fired.');
select is((select count(*) from conductor.schedule_fires where schedule_name = 'r'), 1::bigint,
  'Replacing keeps the fire history.');

select * from finish();
rollback;
