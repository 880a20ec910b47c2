-- search_tasks by enqueued time: [enqueued_after, enqueued_before), each edge exact.
begin;
select plan(3);
\ir ../helpers.psql
\ir fixture.psql

select is((select conductor_tests.ids(tasks) from conductor.search_tasks(
    enqueued_after => '2031-01-01 01:00:00+00', enqueued_before => '2031-01-01 03:00:00+00')),
  format('{%s,%s}', :a2, :b1), 'After is inclusive, before exclusive.');
select is((select conductor_tests.ids(tasks) from conductor.search_tasks(kind => 'sr-a',
    enqueued_after => '2031-01-01 02:00:00+00')),
  format('{%s,%s,%s}', :a4, :a3, :a2), 'After alone, with a kind.');
select is((select conductor_tests.ids(tasks) from conductor.search_tasks(
    enqueued_before => '2031-01-01 00:00:01+00')),
  format('{%s}', :a1), 'Before alone.');

select * from finish();
rollback;
