-- delete_schedule removes a schedule and its fire history, not the tasks it enqueued.
begin;
select plan(5);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('d', '* * * * *', 'deleted-kind') as c \gset
set local conductor.fake_now = '2030-01-01 00:01:00+00';
select task_id from conductor.tick() where schedule_name = 'd' \gset

select is(conductor.delete_schedule('d'), true, 'Deleting an existing schedule returns true.');
select is((select count(*) from conductor.schedules where name = 'd'), 0::bigint, 'The schedule is gone.');
select is((select count(*) from conductor.schedule_fires where schedule_name = 'd'), 0::bigint,
  'Its fire history is gone with it.');
select is((select kind from conductor.tasks where id = :task_id), 'deleted-kind',
  'The task it already enqueued is still there.');
select is(conductor.delete_schedule('d'), false, 'Deleting a schedule that does not exist returns false.');

select * from finish();
rollback;
