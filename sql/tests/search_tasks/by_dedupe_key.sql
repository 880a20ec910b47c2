-- search_tasks by dedupe key: the unfinished holder through tasks_dedupe_key, finished
-- tasks that carried the key by the walk.
begin;
select plan(3);
\ir ../helpers.psql
\ir fixture.psql

select is((select conductor_tests.ids(tasks) from conductor.search_tasks(dedupe_key => 'dk-1')),
  format('{%s,%s}', :a4, :a2), 'By dedupe key: the queued holder and the finished task that had it.');
select is((select (conductor_tests.ids(tasks), scanned, next_before_id, cut_short)::text
             from conductor.search_tasks(dedupe_key => 'dk-1', status => 'queued')),
  format($$({%s},1,,f)$$, :a4), 'With an unfinished status: one index probe, the holder, and nothing further.');
select is((select conductor_tests.ids(tasks) from conductor.search_tasks(dedupe_key => 'dk-none')),
  '{}', 'A key nobody holds matches nothing.');

select * from finish();
rollback;
