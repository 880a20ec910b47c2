-- The wake-up trigger on conductor.tasks fires once per INSERT statement, not once per row.
begin;
select plan(4);

select has_trigger('conductor', 'tasks', 'tasks_notify_inserted', 'conductor.tasks has the trigger tasks_notify_inserted.');
select trigger_is('conductor', 'tasks', 'tasks_notify_inserted', 'conductor', '_notify_inserted',
  'The trigger runs conductor._notify_inserted().');
-- tgtype bits: 1 row-level, 2 before, 4 insert, 8 delete, 16 update, 32 truncate, 64 instead.
select is((select tgtype::integer from pg_trigger where tgrelid = 'conductor.tasks'::regclass and tgname = 'tasks_notify_inserted'),
  4, 'It is an AFTER INSERT ... FOR EACH STATEMENT trigger (tgtype 4: not row-level, not before, insert only).');
select is((select tgnewtable::text from pg_trigger where tgrelid = 'conductor.tasks'::regclass and tgname = 'tasks_notify_inserted'),
  'inserted_tasks', 'It reads the inserted rows from a transition table.');

select * from finish();
rollback;
