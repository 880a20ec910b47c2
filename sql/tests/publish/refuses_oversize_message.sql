-- PostgreSQL refuses a notification of 8000 bytes or more, so publish refuses a message (the
-- text of {"topic", "origin", "payload"}) over 7999 bytes with QC103, naming its size and the
-- limit, whether or not anyone subscribes; a message of exactly 7999 bytes is sent whole.
-- dblink sessions: 'sub' listens and subscribes, 'writer' publishes.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select 'bus-size-' || pg_backend_pid() as t \gset
-- a payload {"p": "xx..."} whose message is exactly n bytes
create function pg_temp.payload(n integer) returns jsonb language sql as $fn$
  select jsonb_build_object('p', repeat('x', n - octet_length(conductor._bus_message(
           'bus-size-' || pg_backend_pid(), '{"p": ""}', 'o'))))
$fn$;
select is(octet_length(conductor._bus_message(:'t', pg_temp.payload(7999), 'o')), 7999,
  '(The helper builds a message of 7999 bytes.)');

select throws_ok(format('select conductor.publish(%L, %L, %L)', :'t', pg_temp.payload(8000), 'o'),
  'QC103', format('a message on topic %L is 8000 bytes, over the notification limit of 7999 bytes', :'t'),
  'A message of 8000 bytes is refused with QC103, naming its size and the limit, though nobody subscribes.');
select throws_ok(format('select conductor.publish(%L, %L)', :'t', jsonb_build_object('p', repeat('é', 5000))),
  'QC103', null, 'The limit counts bytes, not characters.');

select dblink_connect('sub', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('sub', 'listen conductor_bus') as l \gset
select (select count(*) from dblink('sub', format('select conductor.subscribe(%L)', array[:'t'])) as r(x text)) as s \gset

select is((select sent from dblink('writer', format('select conductor.publish(%L, %L, %L)', :'t', pg_temp.payload(7999), 'o'))
             as r(sent boolean)),
  true, 'A message of 7999 bytes is published.');
select dblink_exec('sub', 'do $r$ begin end $r$') as rt \gset
select is((select octet_length(n.extra) from dblink_get_notify('sub') n where n.notify_name = 'conductor_bus'),
  7999, 'The subscriber receives it whole.');
select throws_ok(format($$select * from dblink('writer', 'select conductor.publish(%L, %L, %L)') as r(sent boolean)$$,
                        :'t', pg_temp.payload(8000), 'o'),
  null, null, 'With a subscriber, 8000 bytes are refused too.');

select (select count(*) from dblink('sub', 'select conductor.unsubscribe()') as r(x text)) as u \gset
select dblink_exec('sub', 'unlisten conductor_bus') as ul \gset
select dblink_disconnect('sub') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
