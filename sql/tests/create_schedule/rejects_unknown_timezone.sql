-- An unknown time zone is refused with QC302 when the schedule is created or updated.
begin;
select plan(5);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select throws_ok($$select conductor.create_schedule('tz', '0 9 * * *', 'k', timezone => 'Mars/Olympus_Mons')$$,
  'QC302', NULL, 'A time zone that does not exist is refused with QC302.');
select throws_ok($$select conductor.create_schedule('tz', '0 9 * * *', 'k', timezone => NULL)$$,
  'QC302', NULL, 'An SQL NULL time zone is refused with QC302.');
select is((select count(*) from conductor.schedules where name = 'tz'), 0::bigint,
  'No refused schedule was stored.');

select conductor.create_schedule('tz', '0 9 * * *', 'k', timezone => 'Europe/Paris') as c \gset
select throws_ok($$select conductor.update_schedule('tz', timezone => 'Europe/Atlantis')$$,
  'QC302', NULL, 'update_schedule refuses an unknown time zone with QC302.');
select is((select timezone from conductor.schedules where name = 'tz'), 'Europe/Paris',
  'The refused update left the schedule''s zone as it was.');

select * from finish();
rollback;
