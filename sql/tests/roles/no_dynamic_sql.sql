-- No conductor function builds SQL from caller strings: no PL/pgSQL function in the schema
-- runs a dynamic EXECUTE (comments and string literals aside). One assertion per function,
-- so a new function is checked the day it is added.
begin;
select plan((select count(*)::int from pg_proc p join pg_language l on l.oid = p.prolang
              where p.pronamespace = 'conductor'::regnamespace and l.lanname = 'plpgsql'));

-- The body with -- comments, /* */ comments and '...' literals removed.
create function pg_temp.code_of(src text) returns text
  language sql immutable as $$
  select regexp_replace(regexp_replace(regexp_replace(src,
           '--[^\n]*', '', 'g'),
           '/\*.*?\*/', '', 'g'),
           '''([^'']|'''')*''', '''''', 'g')
$$;

select ok(pg_temp.code_of(p.prosrc) !~* '\mexecute\M',
          format('%s runs no dynamic EXECUTE.', p.oid::regprocedure))
  from pg_proc p join pg_language l on l.oid = p.prolang
 where p.pronamespace = 'conductor'::regnamespace and l.lanname = 'plpgsql'
 order by p.proname, p.oid;

select * from finish();
rollback;
