-- search_tasks examines at most scan_limit tasks a page; a page cut short says so, and its
-- cursor is the last task it examined, so the next page goes on from there.
begin;
select plan(4);
\ir ../helpers.psql
\ir fixture.psql

select is((select (conductor_tests.ids(tasks), scanned, next_before_id, cut_short)::text
             from conductor.search_tasks(kind => 'sr-b', scan_limit => 2)),
  format($$({%s},2,%s,t)$$, :b2, :a4),
  'Two examined (b2, a4): one match, cut short, going on below a4.');
select is((select (conductor_tests.ids(tasks), scanned, next_before_id, cut_short)::text
             from conductor.search_tasks(kind => 'sr-b', scan_limit => 2, before_id => :a4)),
  format('({},2,%s,t)', :a2),
  'A page can be cut short with no match at all (a3, a2 examined).');
select is((select (conductor_tests.ids(tasks), scanned, next_before_id, cut_short)::text
             from conductor.search_tasks(kind => 'sr-b', scan_limit => 2, before_id => :a2)),
  format($$({%s},2,%s,t)$$, :b1, :a1), 'The next one finds b1.');
select is((select (conductor_tests.ids(tasks), next_before_id, cut_short)::text
             from conductor.search_tasks(kind => 'sr-b', scan_limit => 2, before_id => :a1)),
  '({},,f)', 'Below the oldest task the search ends: no cursor, not cut short.');

select * from finish();
rollback;
