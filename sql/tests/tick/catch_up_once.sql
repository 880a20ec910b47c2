-- catch_up 'once' (the default): after a long gap the schedule fires once for the missed
-- stretch, at its earliest missed due time, then goes on as usual.
begin;
select plan(5);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('o', '*/10 * * * *', 'k') as c \gset

set local conductor.fake_now = '2030-01-01 03:05:00+00';
select results_eq($$select due_at from conductor.tick()$$, $$values ('2030-01-01 00:10:00+00'::timestamptz)$$,
  'Three hours late, tick fires once, for the earliest missed due time.');
select is((select count(*) from conductor.tasks where kind = 'k'), 1::bigint,
  'The eighteen missed due times enqueued one task.');
select is((select next_due_at from conductor.schedules where name = 'o'), '2030-01-01 03:10:00+00'::timestamptz,
  'The schedule continues at the next due time after now.');
select is_empty($$select * from conductor.tick()$$, 'Another tick at the same time fires nothing.');

set local conductor.fake_now = '2030-01-01 03:10:00+00';
select results_eq($$select due_at from conductor.tick()$$, $$values ('2030-01-01 03:10:00+00'::timestamptz)$$,
  'At 03:10 it fires as usual.');

select * from finish();
rollback;
