-- search_tasks by payload: tasks whose payload contains the object given (jsonb @>).
begin;
select plan(4);
\ir ../helpers.psql
\ir fixture.psql

select is((select conductor_tests.ids(tasks) from conductor.search_tasks(payload_contains => '{"tag": "x"}')),
  format('{%s,%s}', :a4, :b1), 'A field and its value: the two tasks tagged x.');
select is((select conductor_tests.ids(tasks) from conductor.search_tasks(payload_contains => '{"order": 3}')),
  format('{%s}', :a2), 'A number matches as a number.');
select is((select conductor_tests.ids(tasks) from conductor.search_tasks(payload_contains => '{"who": {"n": "ann"}}')),
  format('{%s}', :a2), 'A nested field.');
select is((select conductor_tests.ids(tasks) from conductor.search_tasks(payload_contains => '{"order": "3"}')),
  '{}', 'The string "3" is not the number 3.');

select * from finish();
rollback;
