-- Due times stay within the engine's time range (conductor._time_range(), to 9999-12-30
-- UTC): a schedule whose line has no due time left by then is refused with QC301 when it
-- is created or switched back on (v0.2.0 stored a next_due_at in year 10000).
begin;
select plan(5);
set local conductor.fake_now = '9999-06-01 00:00:00+00';

select throws_ok($$select conductor.create_schedule('too-late', '0 0 1 1 *', 'k')$$, 'QC301',
  'invalid cron expression ''0 0 1 1 *'': it has no due time left by 9999-12-30 UTC',
  'A yearly line created in June 9999 is refused with QC301: it never fires again within the range.');
select is((select count(*) from conductor.schedules where name = 'too-late'), 0::bigint, 'Nothing is stored.');
select is((select next_due_at from conductor.create_schedule('daily', '0 0 * * *', 'k')),
  '9999-06-02 00:00:00+00'::timestamptz, 'A line with due times left is created as usual.');

select conductor.enable_schedule('daily', false) as c \gset
set local conductor.fake_now = '9999-12-29 12:00:00+00';
select throws_ok($$select conductor.update_schedule('daily', timezone => 'Pacific/Pago_Pago')$$, 'QC301', NULL,
  'A change that leaves no due time within the range is refused with QC301 (local midnight is 11:00Z on the 30th).');
select is((select (enabled, timezone)::text from conductor.schedules where name = 'daily'), '(f,UTC)',
  'and changes nothing.');

select * from finish();
rollback;
