-- plpgsql_check over every PL/pgSQL function of the schema (trigger functions
-- against the table they fire on), with its extra, performance and security
-- warnings on: nothing is reported but the findings explained below, and each
-- of those is still reported (a fixed one leaves the list).
--
-- Explained, and kept:
--   list_tasks, search_tasks: parameter "limit" is a reserved word. It is the SQL API's name
--     (callers use named notation: limit => 20); renaming it breaks them.
--   _pick_queue, _pick_queues, _pick_keyed, _pick_rated: "VOLATILE, should be
--     STABLE". They lock rows (FOR UPDATE SKIP LOCKED), which PostgreSQL
--     refuses in a function that is not volatile; plpgsql_check does not count
--     a row lock as a side effect. (_claim_keys locks rows too, and calls
--     random(), which plpgsql_check counts: it reports nothing.)
--
-- Needs the plpgsql_check extension (Debian: postgresql-<version>-plpgsql-check,
-- installed by scripts/install-deps.sh); on a server without it the test says
-- so and skips.
begin;
select plan(2);
\ir ../helpers.psql

select exists (select from pg_available_extensions where name = 'plpgsql_check') as have_check \gset

\if :have_check
create extension plpgsql_check;

create temp table findings as
select p.proname::text as fn, r.level, r.lineno, r.message, r.detail
  from pg_proc p
  join pg_language l on l.oid = p.prolang
  cross join lateral plpgsql_check_function_tb(
    p.oid,
    relid => coalesce((select t.tgrelid from pg_trigger t where t.tgfoid = p.oid limit 1), 0),
    extra_warnings => true, performance_warnings => true, security_warnings => true) r
 where p.pronamespace = 'conductor'::regnamespace and l.lanname = 'plpgsql';

create temp table explained (fn text, message text);
insert into explained values
  ('list_tasks', 'name of parameter "limit" is reserved keyword'),
  ('search_tasks', 'name of parameter "limit" is reserved keyword'),
  ('_pick_queue', 'routine is marked as VOLATILE, should be STABLE'),
  ('_pick_queues', 'routine is marked as VOLATILE, should be STABLE'),
  ('_pick_keyed', 'routine is marked as VOLATILE, should be STABLE'),
  ('_pick_rated', 'routine is marked as VOLATILE, should be STABLE');

select is_empty(
  $$select f.fn || ' line ' || coalesce(f.lineno::text, '-') || ': ' || f.level || ': ' || f.message
           || coalesce(' (' || f.detail || ')', '')
      from findings f
     where (f.fn, f.message) not in (select e.fn, e.message from explained e)$$,
  'plpgsql_check reports nothing over the schema''s PL/pgSQL functions but the explained findings.');

select set_eq(
  $$select f.fn, f.message from findings f where (f.fn, f.message) in (select e.fn, e.message from explained e)$$,
  $$select e.fn, e.message from explained e$$,
  'Each explained finding is still reported (the list holds nothing fixed).');
\else
select skip('the plpgsql_check extension is not installed on this server', 2);
\endif

select * from finish();
rollback;
