-- publish() notifies only when a session subscribes to the topic (or to '*'): with no
-- subscription, or only subscriptions to other topics, it returns false and its commit sends
-- nothing on conductor_bus (so it takes no commit-time notify lock). A dblink session
-- LISTENs; another one publishes and commits.
begin;
select plan(4);
\ir ../helpers.psql
create extension if not exists dblink;

select 'bus-none-' || pg_backend_pid() as t \gset
select dblink_connect('listener', conductor_tests.conninfo()) as c1 \gset
select dblink_connect('writer', conductor_tests.conninfo()) as c2 \gset
select dblink_exec('listener', 'listen conductor_bus') as l \gset
-- the listener subscribes to another topic only
select (select count(*) from dblink('listener', format('select conductor.subscribe(%L)', array[:'t' || '-other'])) as r(x text)) as s \gset

select is((select sent from dblink('writer', format('select conductor.publish(%L, %L)', :'t', '{"n": 1}'))
             as r(sent boolean)),
  false, 'publish on a topic nobody subscribes to returns false.');
-- a round trip delivers what is pending
select dblink_exec('listener', 'do $r$ begin end $r$') as rt \gset
select is_empty($$select 1 from dblink_get_notify('listener') where notify_name = 'conductor_bus'$$,
  'Its commit sent nothing on conductor_bus.');

select is(conductor.publish(:'t', '{"n": 2}'), false, 'publish in this session: false as well.');
select is((select count(*) from pg_listening_channels() c where c = 'conductor_bus'), 0::bigint,
  '(This session does not listen.)');

select (select count(*) from dblink('listener', 'select conductor.unsubscribe()') as r(x text)) as u \gset
select dblink_exec('listener', 'unlisten conductor_bus') as ul \gset
select dblink_disconnect('listener') as x1 \gset
select dblink_disconnect('writer') as x2 \gset

select * from finish();
rollback;
