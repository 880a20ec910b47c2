-- get_task of a task never claimed answers an empty attempts array.
begin;
select plan(2);

select conductor.enqueue('k', '{}', 'get-new') as t \gset
select is((select attempts from conductor.get_task(:t)), '[]'::jsonb, 'A queued task has an empty attempts array.');
select is((select status::text from conductor.get_task(:t)), 'queued', 'Its status is queued.');

select * from finish();
rollback;
