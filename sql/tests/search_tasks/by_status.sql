-- search_tasks by status: unfinished ones through their partial index, failed ones through
-- tasks_unsuccessful, the others on the primary key; each examines only its source.
begin;
select plan(6);
\ir ../helpers.psql
\ir fixture.psql

select is((select conductor_tests.ids(tasks) from conductor.search_tasks(status => 'queued', kind => 'sr-a')),
  format('{%s}', :a4), 'Queued sr-a: the one queued task of that kind.');
select is((select scanned from conductor.search_tasks(status => 'queued')), 2,
  'A queued search examines only the queued tasks (tasks_ready).');
select is((select conductor_tests.ids(tasks) from conductor.search_tasks(status => 'succeeded', queue => 'sr')),
  format('{%s,%s}', :a2, :a1), 'Succeeded in sr: two.');
select is((select conductor_tests.ids(tasks) from conductor.search_tasks(status => 'failed')),
  format('{%s}', :b1), 'Failed: one.');
select is((select scanned from conductor.search_tasks(status => 'failed')), 1,
  'A failed search examines only the unsuccessful tasks (tasks_unsuccessful).');
select is((select conductor_tests.ids(tasks) from conductor.search_tasks(status => 'cancelled')),
  format('{%s}', :a3), 'Cancelled: one.');

select * from finish();
rollback;
