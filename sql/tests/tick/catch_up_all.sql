-- catch_up 'all' replays every missed due time in order, at most catch_up_limit of them,
-- and skips the rest of the stretch.
begin;
select plan(5);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('a', '*/10 * * * *', 'k', catch_up => 'all', catch_up_limit => 5) as c \gset

set local conductor.fake_now = '2030-01-01 00:45:00+00';
select results_eq($$select due_at from conductor.tick()$$,
  $$values ('2030-01-01 00:10:00+00'::timestamptz), ('2030-01-01 00:20:00+00'), ('2030-01-01 00:30:00+00'),
           ('2030-01-01 00:40:00+00')$$,
  'Four missed due times are replayed, oldest first.');
select ok((select bool_and(ordered) from (
    select task_id > lag(task_id) over (order by due_at) or lag(task_id) over (order by due_at) is null as ordered
      from conductor.schedule_fires where schedule_name = 'a') x),
  'Their tasks were enqueued in due-time order.');

set local conductor.fake_now = '2030-01-01 02:05:00+00';
select results_eq($$select due_at from conductor.tick()$$,
  $$values ('2030-01-01 00:50:00+00'::timestamptz), ('2030-01-01 01:00:00+00'), ('2030-01-01 01:10:00+00'),
           ('2030-01-01 01:20:00+00'), ('2030-01-01 01:30:00+00')$$,
  'Of eight missed due times, catch_up_limit (5) are replayed, the oldest.');
select is((select next_due_at from conductor.schedules where name = 'a'), '2030-01-01 02:10:00+00'::timestamptz,
  'The rest of the stretch (01:40 to 02:00) is skipped: next due after now.');
select is_empty($$select * from conductor.tick()$$, 'A second tick at the same time fires nothing.');

select * from finish();
rollback;
