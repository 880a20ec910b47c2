-- A subscription to '*' receives the messages of every topic; a session subscribed to both
-- '*' and a topic receives each message once (one notification per publish). dblink
-- sessions: 'sub' listens and subscribes, 'writer' publishes.
begin;
select plan(4);
\ir ../helpers.psql
create extension if not exists dblink;

select 'bus-star-' || pg_backend_pid() as t \gset
select dblink_connect('sub', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('sub', 'listen conductor_bus') as l \gset
select (select count(*) from dblink('sub', $$select conductor.subscribe(array['*'])$$) as r(x text)) as s \gset

create function pg_temp.received() returns setof text language plpgsql as $fn$
begin
  perform dblink_exec('sub', 'do $r$ begin end $r$');
  return query select n.extra::jsonb ->> 'topic' from dblink_get_notify('sub') n
                where n.notify_name = 'conductor_bus'
                  and n.extra::jsonb ->> 'topic' like 'bus-star-%';
end
$fn$;

select is((select sent from dblink('writer', format('select conductor.publish(%L)', :'t' || '-a')) as r(sent boolean)),
  true, 'publish on any topic returns true while a session subscribes to ''*''.');
select (select count(*) from dblink('writer', format('select conductor.publish(%L)', :'t' || '-b')) as r(x text)) as p \gset
select set_eq('select pg_temp.received()', format('values (%L), (%L)', :'t' || '-a', :'t' || '-b'),
  'The ''*'' subscriber receives the messages of both topics.');

select (select count(*) from dblink('sub', format('select conductor.subscribe(%L)', array[:'t' || '-a'])) as r(x text)) as s2 \gset
select (select count(*) from dblink('writer', format('select conductor.publish(%L)', :'t' || '-a')) as r(x text)) as p2 \gset
select results_eq('select pg_temp.received()', format('values (%L)', :'t' || '-a'),
  'Subscribed to ''*'' and to the topic: the message arrives once.');

select (select count(*) from dblink('sub', $$select conductor.unsubscribe(array['*'])$$) as r(x text)) as u \gset
select (select count(*) from dblink('writer', format('select conductor.publish(%L)', :'t' || '-b')) as r(x text)) as p3 \gset
select is_empty('select pg_temp.received()',
  'unsubscribe(''*'') gives up every topic but those subscribed by name.');

select (select count(*) from dblink('sub', 'select conductor.unsubscribe()') as r(x text)) as u2 \gset
select dblink_exec('sub', 'unlisten conductor_bus') as ul \gset
select dblink_disconnect('sub') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
