-- A session that LISTENs on conductor_bus and subscribes to a topic receives each message
-- published on it, when the publishing transaction commits: the text of the JSON object
-- {"topic", "origin", "payload"}, the origin as the publisher gave it (null when it gave
-- none). A rolled back publish sends nothing; publish answers true once someone subscribes.
-- dblink sessions: 'sub' listens and subscribes, 'writer' publishes.
begin;
select plan(9);
\ir ../helpers.psql
create extension if not exists dblink;

select 'bus-commit-' || pg_backend_pid() as t \gset
select dblink_connect('sub', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('sub', 'listen conductor_bus') as l \gset
select (select count(*) from dblink('sub', format('select conductor.subscribe(%L)', array[:'t'])) as r(x text)) as s \gset

-- the messages on conductor_bus the subscriber has received about this file's topic
create function pg_temp.received() returns setof jsonb language plpgsql as $fn$
begin
  perform dblink_exec('sub', 'do $r$ begin end $r$');  -- a round trip delivers what is pending
  return query select n.extra::jsonb from dblink_get_notify('sub') n
                where n.notify_name = 'conductor_bus'
                  and n.extra::jsonb ->> 'topic' like 'bus-commit-%';
end
$fn$;

select dblink_exec('writer', 'begin') as b \gset
select is((select sent from dblink('writer', format('select conductor.publish(%L, %L, %L)',
                                                    :'t', '{"id": 7, "what": "order"}', 'app-1'))
             as r(sent boolean)),
  true, 'publish returns true when a session subscribes to the topic.');
select is_empty('select pg_temp.received()', 'Nothing is delivered before the publisher commits.');
select dblink_exec('writer', 'commit') as k \gset
create temp table got as select pg_temp.received() as m;
select is((select count(*) from got), 1::bigint, 'At commit the subscriber receives one message.');
select is((select m from got),
  jsonb_build_object('topic', :'t', 'origin', 'app-1', 'payload', '{"id": 7, "what": "order"}'::jsonb),
  'It is the JSON object {"topic", "origin", "payload"} of the publish.');
select is((select m ->> 'origin' from got), 'app-1', 'The origin is carried as given.');

select (select count(*) from dblink('writer', format('select conductor.publish(%L)', :'t')) as r(x text)) as p \gset
select is(array(select pg_temp.received()),
  array[jsonb_build_object('topic', :'t', 'origin', null, 'payload', '{}'::jsonb)],
  'Without payload and origin: payload {} and origin null.');

select dblink_exec('writer', 'begin') as b2 \gset
select (select count(*) from dblink('writer', format('select conductor.publish(%L, %L)', :'t', '{"n": "rolled back"}')) as r(x text)) as p2 \gset
select dblink_exec('writer', 'rollback') as r2 \gset
select is_empty('select pg_temp.received()', 'A publish rolled back sends nothing.');

select (select count(*) from dblink('writer', format('select conductor.publish(%L, %L, %L)', :'t', '[1, "two", null]', 'app-2')) as r(x text)) as p3 \gset
select is(array(select pg_temp.received() ->> 'payload'), array['[1, "two", null]'],
  'A payload may be any JSON value.');

select (select count(*) from dblink('sub', 'select conductor.unsubscribe()') as r(x text)) as u \gset
select (select count(*) from dblink('writer', format('select conductor.publish(%L)', :'t')) as r(x text)) as p4 \gset
select is_empty('select pg_temp.received()', 'After unsubscribe nothing more is delivered.');

select dblink_exec('sub', 'unlisten conductor_bus') as ul \gset
select dblink_disconnect('sub') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
