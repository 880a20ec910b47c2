-- publish is callable from a trigger, so an application can publish its table changes in
-- SQL: an after insert trigger (on a temporary table of the 'writer' dblink session, as an
-- application role would) publishes each new row; the subscriber receives one message per
-- row at commit, origin as the trigger gave it.
begin;
select plan(2);
\ir ../helpers.psql
create extension if not exists dblink;

select 'bus-trigger-' || pg_backend_pid() as t \gset
select dblink_connect('sub', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('sub', 'listen conductor_bus') as l \gset
select (select count(*) from dblink('sub', format('select conductor.subscribe(%L)', array[:'t'])) as r(x text)) as s \gset

select dblink_exec('writer', 'create temp table bus_orders (id integer primary key, total numeric)') as ct \gset
select dblink_exec('writer', format($w$
  create function pg_temp.bus_orders_published() returns trigger language plpgsql as $f$
  begin
    perform conductor.publish(%L, jsonb_build_object('id', new.id, 'total', new.total), 'db-trigger');
    return null;
  end
  $f$$w$, :'t')) as cf \gset
select dblink_exec('writer', 'create trigger bus_orders_published after insert on pg_temp.bus_orders
                              for each row execute function pg_temp.bus_orders_published()') as tr \gset
select dblink_exec('writer', 'grant insert on pg_temp.bus_orders to conductor_client') as g \gset
select dblink_exec('writer', 'set role conductor_client') as sr \gset
select dblink_exec('writer', 'insert into pg_temp.bus_orders values (1, 9.5), (2, 20)') as ins \gset
select dblink_exec('writer', 'reset role') as rr \gset

select dblink_exec('sub', 'do $r$ begin end $r$') as rt \gset
create temp table got as
select n.extra::jsonb as m from dblink_get_notify('sub') n where n.notify_name = 'conductor_bus';
select is((select count(*) from got), 2::bigint, 'An insert of two rows, as conductor_client, publishes two messages.');
select set_eq('select m from got',
  format($$values (%L::jsonb), (%L::jsonb)$$,
         jsonb_build_object('topic', :'t', 'origin', 'db-trigger', 'payload', '{"id": 1, "total": 9.5}'::jsonb),
         jsonb_build_object('topic', :'t', 'origin', 'db-trigger', 'payload', '{"id": 2, "total": 20}'::jsonb)),
  'Each carries its row and the trigger''s origin.');

select (select count(*) from dblink('sub', 'select conductor.unsubscribe()') as r(x text)) as u \gset
select dblink_exec('sub', 'unlisten conductor_bus') as ul \gset
select dblink_disconnect('sub') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
