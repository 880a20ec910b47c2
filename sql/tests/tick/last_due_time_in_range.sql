-- A schedule's last due time within the engine's time range (to 9999-12-30 UTC) fires
-- once; with no due time left the schedule is switched off (next_due_at stays at its last
-- due time) instead of storing a time past the range (v0.2.0 stored 9999-12-30 11:00Z and
-- would have gone on into year 10000).
begin;
select plan(5);
set local conductor.fake_now = '9999-12-28 12:00:00+00';

-- local midnight in Pago Pago (UTC-11) is 11:00Z
select is((select next_due_at from conductor.create_schedule('last', '0 0 * * *', 'k', timezone => 'Pacific/Pago_Pago')),
  '9999-12-29 11:00:00+00'::timestamptz, 'Its last due time within the range is 9999-12-29 11:00Z.');

set local conductor.fake_now = '9999-12-29 11:00:30+00';
select results_eq($$select due_at from conductor.tick()$$, $$values ('9999-12-29 11:00:00+00'::timestamptz)$$,
  'It fires once at its last due time.');
select is((select (enabled, next_due_at, last_due_at, last_error)::text from conductor.schedules where name = 'last'),
  '(f,"9999-12-29 11:00:00+00","9999-12-29 11:00:00+00",)',
  'With no due time left it is switched off, its next_due_at kept at the last due time, no error recorded.');
select is((select count(*) from conductor.tasks where kind = 'k'), 1::bigint, 'One task was enqueued.');
select is_empty($$select * from conductor.tick()$$, 'Later ticks fire nothing.');

select * from finish();
rollback;
