-- tick fires each due time exactly once: nothing before it is due, one fire (a schedule_fires
-- row and a task) when it is, nothing on a second tick at the same time, and then the next.
begin;
select plan(10);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('once-each', '*/10 * * * *', 'k') as c \gset

select is_empty($$select * from conductor.tick()$$, 'Right after creation nothing is due.');
set local conductor.fake_now = '2030-01-01 00:09:59.999999+00';
select is_empty($$select * from conductor.tick()$$, 'A microsecond before the due time nothing fires.');

set local conductor.fake_now = '2030-01-01 00:10:00+00';
create temp table fired as select * from conductor.tick();
select results_eq($$select schedule_name, due_at from fired$$,
  $$values ('once-each'::text, '2030-01-01 00:10:00+00'::timestamptz)$$,
  'At the due time tick fires it once and returns the schedule and the due time.');
select results_eq(
  $$select due_at, task_id, fired_at from conductor.schedule_fires where schedule_name = 'once-each'$$,
  $$select '2030-01-01 00:10:00+00'::timestamptz, task_id, '2030-01-01 00:10:00+00'::timestamptz from fired$$,
  'The fire is recorded with its task and the time it fired.');
select is((select count(*) from conductor.tasks where id = (select task_id from fired)), 1::bigint,
  'The returned task exists.');
select is(
  (select jsonb_build_object('next_due_at', next_due_at, 'last_due_at', last_due_at, 'last_task_id', last_task_id)
     from conductor.schedules where name = 'once-each'),
  jsonb_build_object('next_due_at', '2030-01-01 00:20:00+00'::timestamptz,
    'last_due_at', '2030-01-01 00:10:00+00'::timestamptz, 'last_task_id', (select task_id from fired)),
  'The schedule moves on to 00:20 and remembers its last fire.');

select is_empty($$select * from conductor.tick()$$, 'A second tick at the same time fires nothing.');
set local conductor.fake_now = '2030-01-01 00:15:00+00';
select is_empty($$select * from conductor.tick()$$, 'Nor does a tick between two due times.');
select is((select count(*) from conductor.tasks where kind = 'k'), 1::bigint,
  'Four ticks enqueued one task.');

set local conductor.fake_now = '2030-01-01 00:20:00+00';
select results_eq($$select due_at from conductor.tick()$$, $$values ('2030-01-01 00:20:00+00'::timestamptz)$$,
  'At the next due time it fires again.');

select * from finish();
rollback;
