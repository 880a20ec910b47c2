-- stats() reads finished history through the partial index tasks_finished, so a large
-- history is never scanned whole, and the backlog through the claim's own partial index.
begin;
select plan(4);

select has_index('conductor', 'tasks', 'tasks_finished', 'conductor.tasks has the index tasks_finished.');
select matches((select pg_get_expr(indpred, indrelid) from pg_index where indexrelid = 'conductor.tasks_finished'::regclass),
  'finished_at IS NOT NULL', 'tasks_finished is partial: finished rows only, so claims never touch it.');

-- The plan of stats()'s own body (from pg_proc), with sequential scans priced out.
create function pg_temp.plan_of_stats() returns text
  language plpgsql as $$
declare v_line text; v_plan text := '';
begin
  for v_line in execute 'explain ' || (select prosrc from pg_proc where oid = 'conductor.stats()'::regprocedure) loop
    v_plan := v_plan || v_line || E'\n';
  end loop;
  return v_plan;
end $$;
set local enable_seqscan = off;
select matches(pg_temp.plan_of_stats(), 'tasks_finished',
  'The last 15 minutes of finished tasks are read through tasks_finished.');
select matches(pg_temp.plan_of_stats(), 'tasks_ready(_by_queue)?',
  'Ready and scheduled tasks are counted through a partial index over queued tasks.');

select * from finish();
rollback;
