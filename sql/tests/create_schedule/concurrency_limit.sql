-- A schedule carries concurrency_limit with its concurrency_key: stored by create_schedule,
-- kept by update_schedule, given to the task each fire makes (tick, fire_schedule); a
-- limit without the schedule's key, or out of range, is QC106. Without one, a keyed fire
-- takes its kind's limit.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('lim-s', '* * * * *', 'export', queue => 'lim-sq',
                                 concurrency_key => 'customer-1', concurrency_limit => 3) as r \gset
select is((select concurrency_limit from conductor.list_schedules() where name = 'lim-s'), 3,
  'create_schedule stores the limit; list_schedules shows it.');
select conductor.update_schedule('lim-s', priority => 2) as u \gset
select is((select concurrency_limit from conductor.schedules where name = 'lim-s'), 3,
  'update_schedule keeps it.');
select conductor.fire_schedule('lim-s') as fired \gset
select is((select concurrency_limit from conductor.tasks where id = :fired), 3,
  'A fire''s task (fire_schedule) carries the schedule''s limit.');
select is((select concurrency_key from conductor.tasks where id = :fired), 'customer-1',
  'And its key.');

select conductor.configure_kind('export.k', concurrency_limit => 5);
select conductor.create_schedule('lim-k', '* * * * *', 'export.k', queue => 'lim-sq', concurrency_key => 'c2') as r2 \gset
set local conductor.fake_now = '2030-01-01 00:01:00+00';
select count(*) from conductor.tick();
select is((select t.concurrency_limit from conductor.schedule_fires f join conductor.tasks t on t.id = f.task_id
            where f.schedule_name = 'lim-k'), 5,
  'A keyed schedule without a limit fires tasks with the kind''s.');

select throws_ok($$select conductor.create_schedule('lim-bad', '* * * * *', 'export', concurrency_limit => 2)$$, 'QC106',
  'invalid concurrency_limit 2 for kind ''export'': a limit is per concurrency_key, and the task has none',
  'A limit without the schedule''s key is refused.');

select * from finish();
rollback;
