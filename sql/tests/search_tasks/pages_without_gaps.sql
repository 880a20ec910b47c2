-- search_tasks pages: following next_before_id returns every match once, in order,
-- whatever the page size and the scan budget.
begin;
select plan(4);
\ir ../helpers.psql
\ir fixture.psql

-- every page of a search, its ids concatenated in the order the pages came
create function pg_temp.paged(kind text, "limit" integer, scan_limit integer) returns text
  language plpgsql as $$
declare
  v_before bigint;
  v_page record;
  v_ids bigint[] := '{}';
  v_pages integer := 0;
begin
  loop
    select * into v_page from conductor.search_tasks(kind => paged.kind, before_id => v_before,
                                                      "limit" => paged."limit", scan_limit => paged.scan_limit);
    v_ids := v_ids || array(select t.id from unnest(v_page.tasks) t);
    v_pages := v_pages + 1;
    exit when v_page.next_before_id is null or v_pages > 100;
    v_before := v_page.next_before_id;
  end loop;
  return v_ids::text;
end $$;

select is(pg_temp.paged('sr-a', 1, 10000), format('{%s,%s,%s,%s}', :a4, :a3, :a2, :a1),
  'A page of one at a time: each sr-a task once, newest first.');
select is(pg_temp.paged('sr-a', 3, 10000), format('{%s,%s,%s,%s}', :a4, :a3, :a2, :a1),
  'Pages of three: no gap between them.');
select is(pg_temp.paged('sr-a', 2, 1), format('{%s,%s,%s,%s}', :a4, :a3, :a2, :a1),
  'A scan budget of one task a page: every match, none twice.');
select is((select (conductor_tests.ids(tasks), next_before_id)::text
             from conductor.search_tasks(kind => 'sr-a', "limit" => 2)),
  format('("{%s,%s}",%s)', :a4, :a3, :a3), 'A full page''s cursor is its last task.');

select * from finish();
rollback;
