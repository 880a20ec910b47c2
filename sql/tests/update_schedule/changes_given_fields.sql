-- update_schedule changes only the fields it is given; a new line restarts from now.
begin;
select plan(5);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('u', '0 * * * *', 'k', '{"a": 1}', 'q1', priority => 2, max_attempts => 3) as c \gset
create temp table before as select to_jsonb(s) as row from conductor.schedules s where name = 'u';

set local conductor.fake_now = '2030-01-01 00:05:00+00';
select is(
  (select to_jsonb(u) from conductor.update_schedule('u', payload => '{"a": 2}', queue => 'q2') u),
  (select row || jsonb_build_object('payload', '{"a": 2}'::jsonb, 'queue', 'q2',
     'updated_at', '2030-01-01 00:05:00+00'::timestamptz) from before),
  'Changing payload and queue returns the row with those two changed, updated_at moved, the rest kept.');
select is((select next_due_at from conductor.schedules where name = 'u'), '2030-01-01 01:00:00+00'::timestamptz,
  'An update that leaves the line alone keeps next_due_at.');

select is(
  (select next_due_at from conductor.update_schedule('u', cron => '*/15 * * * *')),
  '2030-01-01 00:15:00+00'::timestamptz,
  'A new line restarts from now: the next quarter hour.');
select is(
  (select jsonb_build_object('kind', kind, 'priority', priority, 'max_attempts', max_attempts, 'timezone', timezone)
     from conductor.schedules where name = 'u'),
  '{"kind": "k", "priority": 2, "max_attempts": 3, "timezone": "UTC"}'::jsonb,
  'Fields not given keep their values.');

select throws_ok($$select conductor.update_schedule('no-such-schedule', payload => '{}')$$, 'QC203', NULL,
  'Updating a schedule that does not exist raises QC203.');

select * from finish();
rollback;
