-- The statuses are named once: conductor.unfinished_statuses() and
-- conductor.finished_statuses() (functions/internal). What cannot call a function
-- (a partial index's predicate, a trigger's WHEN, a CHECK if one comes back) names them itself, so
-- this file holds each such list on conductor.tasks to the functions: a list
-- naming any unfinished status names exactly the unfinished ones, and one naming
-- every finished status names only those. And a query testing
-- status = any (conductor.unfinished_statuses()) still uses the partial index
-- whose predicate spells the list (the planner folds the call to a constant).
begin;
select plan(8);

select is(conductor.unfinished_statuses() || conductor.finished_statuses(),
          pg_catalog.enum_range(null::conductor.task_status),
          'The unfinished and the finished statuses are the enum, in its order.');

select is(conductor.unfinished_statuses() && conductor.finished_statuses(), false,
          'No status is both unfinished and finished.');

select is(conductor.unfinished_statuses(), array['queued', 'running', 'waiting']::conductor.task_status[],
          'The unfinished statuses are queued, running and waiting.');

-- every status list in the definitions on conductor.tasks: index predicates,
-- CHECK constraints and trigger conditions, as PostgreSQL prints them
create temporary table status_lists as
  select d.what, array(select pg_catalog.unnest(
                         pg_catalog.regexp_matches(m.list[1], '''([a-z_]+)''::conductor\.task_status', 'g'))
                        )::conductor.task_status[] as statuses
    from (select 'index ' || i.indexrelid::regclass::text as what, pg_catalog.pg_get_expr(i.indpred, i.indrelid) as def
            from pg_catalog.pg_index i
           where i.indrelid = 'conductor.tasks'::regclass and i.indpred is not null
          union all
          select 'constraint ' || c.conname, pg_catalog.pg_get_constraintdef(c.oid)
            from pg_catalog.pg_constraint c
           where c.conrelid = 'conductor.tasks'::regclass and c.contype = 'c'
          union all
          select 'trigger ' || g.tgname, pg_catalog.pg_get_triggerdef(g.oid)
            from pg_catalog.pg_trigger g
           where g.tgrelid = 'conductor.tasks'::regclass and not g.tgisinternal) d,
         pg_catalog.regexp_matches(d.def, 'ARRAY\[([^]]*)\]', 'g') m(list);

select cmp_ok((select pg_catalog.count(*) from status_lists), '>=', 2::bigint,
              'The status lists on conductor.tasks are found (the dedupe index, the unsuccessful index).');

select is_empty(
  $$select s.what, s.statuses from status_lists s
     where s.statuses && conductor.unfinished_statuses()
       and not (s.statuses @> conductor.unfinished_statuses() and s.statuses <@ conductor.unfinished_statuses())$$,
  'Every list on conductor.tasks that names an unfinished status names exactly conductor.unfinished_statuses().');

select is_empty(
  $$select s.what, s.statuses from status_lists s
     where s.statuses @> conductor.finished_statuses()
       and not s.statuses <@ conductor.finished_statuses()$$,
  'Every list on conductor.tasks that names all the finished statuses names only conductor.finished_statuses().');

-- a trigger on a task's end tests the turn of finished_at (NULL exactly while the
-- status is unfinished: schema/state_machine_keeps_its_invariants.sql), not a list
select is((select pg_catalog.count(*) from pg_catalog.pg_trigger g
            where g.tgrelid = 'conductor.tasks'::regclass and g.tgname = 'tasks_child_finished'
              and pg_catalog.pg_get_triggerdef(g.oid)
                  like '%(new.finished_at IS NOT NULL) AND (old.finished_at IS NULL)%'),
          1::bigint,
          'tasks_child_finished fires when finished_at turns from NULL to a time: a change from an unfinished status to a finished one.');

-- the dedupe holder's lookup (enqueue) still reads the partial index
create function pg_temp.explain_lines(query text) returns setof text
  language plpgsql as $f$
declare
  v_line text;
begin
  for v_line in execute 'explain (costs off) ' || query loop
    return next v_line;
  end loop;
end
$f$;
select isnt_empty(
  $$select l from pg_temp.explain_lines(
      'select t.id from conductor.tasks t where t.dedupe_key = ''a''
          and t.status = any (conductor.unfinished_statuses())') l
     where l like '%tasks_dedupe_key%'$$,
  'status = any (conductor.unfinished_statuses()) matches the partial index tasks_dedupe_key.');

select * from finish();
rollback;
