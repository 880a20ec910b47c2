-- emit_event's messages echo the event name as every message of the engine echoes a
-- caller's value (conductor._echo): its first 100 characters, then its length. v0.2.0
-- echoed emit_event(repeat('e', 100000), '{}')'s whole name back. As a client login.
begin;
select plan(4);
\ir ../helpers.psql
create role t_client;
grant conductor_client to t_client;

create function pg_temp.error_of(sql text) returns text language plpgsql as $$
begin
  execute sql;
  return null;
exception when others then
  return sqlstate || ' ' || sqlerrm;
end
$$;
grant execute on function pg_temp.error_of(text) to t_client;
set local role t_client;

select is(pg_temp.error_of($$select conductor.emit_event(repeat('e', 100000), '{}')$$),
  'QC106 invalid event name ''' || repeat('e', 100) || '''…(100000 bytes): a non-empty name of at most 1000 bytes',
  'A name of 100000 bytes is refused with its first 100 characters and its length.');
select cmp_ok(length(pg_temp.error_of($$select conductor.emit_event(repeat('e', 100000), '{}')$$)), '<', 200,
  'The message stays short.');
select is(pg_temp.error_of($$select conductor.emit_event(repeat('n', 999), '[1]')$$),
  'QC102 invalid payload for event ''' || repeat('n', 100) || '''…(999 bytes): a payload is a JSON object, got array',
  'A bad payload''s message cuts the (valid) name too.');
select is(pg_temp.error_of($$select conductor.emit_event('short', '"x"')$$),
  'QC102 invalid payload for event ''short'': a payload is a JSON object, got string',
  'A short name is echoed whole.');

select * from finish();
rollback;
