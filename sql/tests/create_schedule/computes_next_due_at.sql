-- create_schedule stores the schedule with its defaults and the first due time after now,
-- read in the schedule's time zone.
begin;
select plan(7);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select * from conductor.create_schedule('nightly-report', '0 9 * * *', 'report') \gset s_

select is(:'s_next_due_at'::timestamptz, '2030-01-01 09:00:00+00'::timestamptz,
  'A daily 09:00 line in UTC is first due at 09:00 UTC of the same day.');
select is(
  (select to_jsonb(s) - array['name', 'cron', 'kind', 'next_due_at']
     from conductor.schedules s where name = 'nightly-report'),
  jsonb_build_object(
    'timezone', 'UTC', 'payload', '{}'::jsonb, 'queue', 'default', 'priority', 0,
    'max_attempts', null, 'dedupe_key', null, 'concurrency_key', null, 'concurrency_limit', null, 'expires_in', null, 'rate_key', null,
    'catch_up', 'once', 'catch_up_limit', 100, 'enabled', true,
    'last_due_at', null, 'last_task_id', null,
    'created_at', '2030-01-01 00:00:00+00'::timestamptz,
    'updated_at', '2030-01-01 00:00:00+00'::timestamptz,
    'declared_by', 'admin', 'changed_by', current_user::text, 'last_error', null, 'last_error_at', null,
    'owner', current_user::text),
  'The stored row has the documented defaults: UTC, empty payload, queue default, priority 0, '
  || 'catch_up once with limit 100, enabled, never fired, no error, created now by this (admin) role, which owns it.');

select is(
  (select next_due_at from conductor.create_schedule('ny-morning', '0 9 * * *', 'report',
     timezone => 'America/New_York')),
  '2030-01-01 14:00:00+00'::timestamptz,
  'In America/New_York (UTC-5 in January) 09:00 local is 14:00 UTC.');
select is(
  (select next_due_at from conductor.create_schedule('tokyo-morning', '0 9 * * *', 'report',
     timezone => 'Asia/Tokyo')),
  '2030-01-02 00:00:00+00'::timestamptz,
  'In Asia/Tokyo (UTC+9) the next 09:00 local is 00:00 UTC of the next day: 09:00 today has passed.');
select is(
  (select next_due_at from conductor.create_schedule('every-second', '* * * * * *', 'tick')),
  '2030-01-01 00:00:01+00'::timestamptz,
  'A six-field line (seconds first) is due at the next second, strictly after now.');
select is(
  (select next_due_at from conductor.create_schedule('berlin-summer', '30 2 * * *', 'report',
     timezone => 'Europe/Berlin')),
  conductor.cron_next('30 2 * * *', '2030-01-01 00:00:00+00', 'Europe/Berlin'),
  'next_due_at is what cron_next answers for the line, the clock and the zone.');
select results_eq(
  $$select name from conductor.list_schedules()$$,
  $$values ('berlin-summer'::text), ('every-second'), ('nightly-report'), ('ny-morning'), ('tokyo-morning')$$,
  'list_schedules returns every schedule, by name.');

select * from finish();
rollback;
