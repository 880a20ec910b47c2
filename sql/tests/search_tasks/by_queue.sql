-- search_tasks by queue, alone and with a kind.
begin;
select plan(2);
\ir ../helpers.psql
\ir fixture.psql

select is((select conductor_tests.ids(tasks) from conductor.search_tasks(queue => 'sr-other')),
  format('{%s}', :a3), 'By queue: the one task of sr-other.');
select is((select conductor_tests.ids(tasks) from conductor.search_tasks(queue => 'sr', kind => 'sr-a')),
  format('{%s,%s,%s}', :a4, :a2, :a1), 'By queue and kind: both filters hold.');

select * from finish();
rollback;
