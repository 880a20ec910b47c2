-- search_tasks by finished time: [finished_after, finished_before); a range holding few
-- tasks is read whole from tasks_finished.
begin;
select plan(3);
\ir ../helpers.psql
\ir fixture.psql

select is((select conductor_tests.ids(tasks) from conductor.search_tasks(
    finished_after => '2031-01-01 01:10:00+00', finished_before => '2031-01-01 03:00:00+00')),
  format('{%s,%s}', :a2, :b1), 'After is inclusive, before exclusive.');
select is((select (scanned, next_before_id, cut_short)::text from conductor.search_tasks(
    finished_after => '2031-01-01 01:10:00+00', finished_before => '2031-01-01 03:00:00+00')),
  '(2,,f)', 'Only the two tasks finished in the range are examined, and the search is complete.');
select is((select conductor_tests.ids(tasks) from conductor.search_tasks(
    finished_after => '2031-01-01 00:00:00+00', status => 'succeeded')),
  format('{%s,%s}', :a2, :a1), 'With a status: the finished range holds, and the status.');

select * from finish();
rollback;
