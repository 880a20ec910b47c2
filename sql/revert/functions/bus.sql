-- Revert conductor:functions/bus from pg: back to its v0.2.0 bodies
--
-- The event bus and named locks (issue 17).
--
-- Bus: messages on topics, over LISTEN/NOTIFY channel 'conductor_bus'. A
-- message is the text of a JSON object {"topic", "origin", "payload"}. As for
-- the wake-ups (functions/notify), a transaction that calls pg_notify takes a
-- database-wide lock at commit and holds it through its WAL flush, so a
-- publish notifies only when a session subscribes to the topic or to '*'
-- (conductor.subscriptions, keyed by backend pid); otherwise it costs one
-- probe of the subscriptions' primary key and sends nothing.
--
--   conductor.subscribe(topics)              this session listens for topics ('*': all)
--   conductor.unsubscribe(topics)            gives them up (NULL: every one)
--   conductor.publish(topic, payload, origin) -> boolean
--                                            sends a message if a session subscribes
--   conductor._publish(topic, payload, origin) -> boolean
--                                            the same for the engine (no checks of the
--                                            topic; granted to nobody): functions/notify
--                                            publishes topic 'tasks'
--   conductor._bus_message(topic, payload, origin) -> text
--                                            the message's text; QC103 over 7999 bytes
--
-- A subscriber LISTENs on conductor_bus, then calls subscribe() (autocommit),
-- then reads whatever state it mirrors: a transaction that probed the
-- subscriptions before the subscription committed sends nothing. Delivery is
-- at the publishing transaction's commit, never on rollback; a subscriber whose
-- connection drops misses what was sent meanwhile (listen, subscribe and read
-- again). reap() forgets the subscriptions of sessions that ended. The origin
-- is a label a process puts on its messages (so it can skip its own), not
-- proof of who sent them: any role may NOTIFY any channel.
--
-- Locks:
--   conductor.exclusive(name)                a transaction-scoped advisory lock on
--                                            hashtextextended('conductor.exclusive:' || name, 0)
--
-- Lock order: exclusive() takes only its own key; callers that take several
-- take them in name order.

begin;
set local role conductor_owner;

-- what the rework added: exclusive() goes back to its advisory lock below
drop function conductor._forget_exclusive_locks(interval, integer);

create or replace function conductor._bus_message(topic text, payload jsonb, origin text default null) returns text
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_message text := pg_catalog.jsonb_build_object(
    'topic', _bus_message.topic, 'origin', _bus_message.origin,
    'payload', coalesce(_bus_message.payload, '{}'::jsonb))::text;
  v_bytes integer := pg_catalog.octet_length(v_message);
begin
  if v_bytes > 7999 then
    raise exception 'a message on topic % is % bytes, over the notification limit of 7999 bytes',
      conductor._echo(_bus_message.topic), v_bytes
      using errcode = 'QC103',
            hint = 'Publish an id and let subscribers read the rest from a table.';
  end if;
  return v_message;
end
$$;

comment on function conductor._bus_message(text, jsonb, text) is
$$The text of a bus message: the JSON object {"topic", "origin", "payload"} (payload NULL:
{}). Raises QC103 when it is over 7999 bytes (PostgreSQL's notification limit is 8000),
naming its size.$$;

create or replace function conductor._publish(topic text, payload jsonb, origin text default null) returns boolean
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if not exists (select from conductor.subscriptions s where s.topic in (_publish.topic, '*')) then
    return false;
  end if;
  perform pg_catalog.pg_notify('conductor_bus',
    conductor._bus_message(_publish.topic, _publish.payload, _publish.origin));
  return true;
end
$$;

comment on function conductor._publish(text, jsonb, text) is
$$The engine's publish: sends the message on channel conductor_bus at commit when a session
subscribes to topic or to '*', and answers whether it did; otherwise one probe of the
subscriptions' key. Checks nothing of the topic. Raises QC103 for a message over 7999
bytes. Granted to nobody.$$;

create or replace function conductor.publish(topic text, payload jsonb default '{}', origin text default null)
  returns boolean
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_message text;
begin
  if publish.topic is null or publish.topic = '' or publish.topic = '*'
     or pg_catalog.length(publish.topic) > 200 then
    raise exception 'invalid topic %', conductor._echo(publish.topic)
      using errcode = 'QC106',
            detail = 'A topic is 1 to 200 characters, and not ''*'' (which subscribes to every topic).';
  end if;
  -- built before the probe: an oversize message is refused whether or not anyone listens
  v_message := conductor._bus_message(publish.topic, publish.payload, publish.origin);
  if not exists (select from conductor.subscriptions s where s.topic in (publish.topic, '*')) then
    return false;
  end if;
  perform pg_catalog.pg_notify('conductor_bus', v_message);
  return true;
end
$$;

comment on function conductor.publish(text, jsonb, text) is
$$Publishes payload (any JSON; NULL: {}) on topic: when a session subscribes to the topic or
to '*', notifies channel conductor_bus with the text of {"topic", "origin", "payload"},
delivered when the caller's transaction commits (never on rollback), and returns true;
otherwise sends nothing (no commit-time notify lock) and returns false. origin is a label of
the publishing process (subscribers skip their own), not proof of who sent it. Callable from
triggers. Raises QC106 for a topic that is NULL, empty, '*' or over 200 characters, QC103
when the message is over 7999 bytes (whether or not anyone subscribes).$$;

create or replace function conductor.subscribe(topics text[]) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if subscribe.topics is null or pg_catalog.cardinality(subscribe.topics) = 0
     or exists (select from pg_catalog.unnest(subscribe.topics) t(topic)
                 where t.topic is null or t.topic = '' or pg_catalog.length(t.topic) > 200) then
    raise exception 'invalid topics %', conductor._echo(subscribe.topics::text)
      using errcode = 'QC106',
            detail = 'A non-empty list of topics of 1 to 200 characters (''*'': every topic).';
  end if;
  insert into conductor.subscriptions as s (topic, pid, since)
  select distinct t.topic, pg_catalog.pg_backend_pid(), conductor.now()
    from pg_catalog.unnest(subscribe.topics) t(topic)
  on conflict on constraint subscriptions_pkey do nothing;
end
$$;

comment on function conductor.subscribe(text[]) is
$$This session (its backend pid) receives the bus messages of topics ('*': every topic) from
transactions that publish after this call commits: LISTEN conductor_bus on the same
connection first. Adds to the session's earlier topics; idempotent. unsubscribe gives them
up; reap forgets a session that ended. Raises QC106 for a NULL or empty list, or a topic
that is NULL, empty or over 200 characters.$$;

create or replace function conductor.unsubscribe(topics text[] default null) returns void
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  delete from conductor.subscriptions s
   where s.pid = pg_catalog.pg_backend_pid()
     and (unsubscribe.topics is null or s.topic = any (unsubscribe.topics))
$$;

comment on function conductor.unsubscribe(text[]) is
$$This session no longer receives the messages of topics (NULL: of every topic it subscribed
to; '*' gives up only the subscription to every topic). Idempotent.$$;

create or replace function conductor.exclusive(name text) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if exclusive.name is null or exclusive.name = '' then
    raise exception 'an exclusive lock needs a name' using errcode = 'QC106';
  end if;
  perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('conductor.exclusive:' || exclusive.name, 0));
end
$$;

comment on function conductor.exclusive(text) is
$$Waits for, then takes, the transaction-scoped advisory lock of name (key
hashtextextended('conductor.exclusive:' || name, 0)); it is released when the caller's
transaction ends. Two transactions holding the same name never overlap; taking it again in
the same transaction returns at once. Serialises work on one entity across request code,
tasks and SQL (exclusive('autoland:' || id)). Subject to lock_timeout and deadlock
detection: take several in name order. Raises QC106 for a NULL or empty name.$$;

revoke execute on function conductor._bus_message(text, jsonb, text) from public;
revoke execute on function conductor._publish(text, jsonb, text) from public;
revoke execute on function conductor.publish(text, jsonb, text) from public;
revoke execute on function conductor.subscribe(text[]) from public;
revoke execute on function conductor.unsubscribe(text[]) from public;
revoke execute on function conductor.exclusive(text) from public;
grant execute on function conductor.publish(text, jsonb, text) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.subscribe(text[]) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.unsubscribe(text[]) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.exclusive(text) to conductor_client, conductor_worker, conductor_admin;

commit;
