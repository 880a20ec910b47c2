-- No application role may INSERT, UPDATE or DELETE the tables directly: every write goes
-- through the API functions. Each role tries each write on tasks, attempts and workers,
-- then no role holds any write privilege on any table or sequence of the schema, but the
-- admin's UPDATE of conductor.settings (its configuration).
begin;
select plan(30);

create role t_client;
create role t_worker;
create role t_admin;
grant conductor_client to t_client;
grant conductor_worker to t_worker;
grant conductor_admin to t_admin;

create temp table writes (stmt text, what text);
insert into writes values
  ('insert into conductor.%I default values', 'insert into'),
  ('update conductor.%I set id = id', 'update'),
  ('delete from conductor.%I', 'delete from');
create temp table tables_tried (name text);
insert into tables_tried values ('tasks'), ('attempts'), ('workers');
grant select on writes, tables_tried to public;

set local role t_client;
select throws_ok(format(w.stmt, t.name), '42501', null, format('conductor_client cannot %s conductor.%s.', w.what, t.name))
  from tables_tried t cross join writes w order by t.name, w.what;
reset role;

set local role t_worker;
select throws_ok(format(w.stmt, t.name), '42501', null, format('conductor_worker cannot %s conductor.%s.', w.what, t.name))
  from tables_tried t cross join writes w order by t.name, w.what;
reset role;

set local role t_admin;
select throws_ok(format(w.stmt, t.name), '42501', null, format('conductor_admin cannot %s conductor.%s.', w.what, t.name))
  from tables_tried t cross join writes w order by t.name, w.what;
reset role;

select is_empty(
  $$select r.rolname || ' ' || p.priv || ' on ' || c.relname
      from pg_class c
      cross join (values ('conductor_client'), ('conductor_worker'), ('conductor_admin')) r(rolname)
      cross join (values ('INSERT'), ('UPDATE'), ('DELETE'), ('TRUNCATE')) p(priv)
     where c.relnamespace = 'conductor'::regnamespace and c.relkind in ('r', 'p')
       and has_table_privilege(r.rolname, c.oid, p.priv)
    except
    select 'conductor_admin UPDATE on settings'$$,
  'No role holds INSERT, UPDATE, DELETE or TRUNCATE on any conductor table '
  '(but conductor_admin updates conductor.settings).');
select is_empty(
  $$select r.rolname || ' on ' || c.relname
      from pg_class c
      cross join (values ('conductor_client'), ('conductor_worker'), ('conductor_admin')) r(rolname)
     where c.relnamespace = 'conductor'::regnamespace and c.relkind = 'S'
       and (has_sequence_privilege(r.rolname, c.oid, 'USAGE') or has_sequence_privilege(r.rolname, c.oid, 'UPDATE'))$$,
  'No role may draw ids from or set a conductor sequence.');
select is_empty(
  $$select c.relname from pg_class c
     where c.relnamespace = 'conductor'::regnamespace and c.relkind in ('r', 'p')
       and not has_table_privilege('conductor_client', c.oid, 'SELECT')$$,
  'Every conductor table stays readable to the client role (DESIGN: readers may query the tables).');

select * from finish();
rollback;
