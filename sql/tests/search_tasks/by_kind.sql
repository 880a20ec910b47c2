-- search_tasks by kind: every task of that kind, newest first, across queues and statuses.
begin;
select plan(2);
\ir ../helpers.psql
\ir fixture.psql

select is((select conductor_tests.ids(tasks) from conductor.search_tasks(kind => 'sr-a')),
  format('{%s,%s,%s,%s}', :a4, :a3, :a2, :a1), 'By kind: the four sr-a tasks, newest first.');
select is((select conductor_tests.ids(tasks) from conductor.search_tasks(kind => 'sr-b')),
  format('{%s,%s}', :b2, :b1), 'By kind: the two sr-b tasks.');

select * from finish();
rollback;
