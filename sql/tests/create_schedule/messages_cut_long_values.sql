-- create_schedule, update_schedule and configure_kind echo at most the first 100
-- characters of a bad value (conductor._echo). A cron line over 1000 bytes or a time zone
-- over 100 characters is refused before it is parsed, so its message is short too.
begin;
select plan(8);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create function pg_temp.error_of(sql text) returns text language plpgsql as $$
begin
  execute sql;
  return null;
exception when others then
  return sqlstate || ' ' || sqlerrm;
end
$$;

select alike(pg_temp.error_of(format('select conductor.create_schedule(%L, %L, %L)', repeat('n', 100000), '* * * * *', 'k')),
  'QC106 invalid schedule name ''' || repeat('n', 100) || '''…(100000 bytes)%',
  'A name of 100,000 characters is echoed cut.');
select cmp_ok(length(pg_temp.error_of(format('select conductor.create_schedule(%L, %L, %L)', 's', '* * * * *', repeat('k', 100000)))),
  '<', 300, 'A kind of 100,000 characters comes back in a short message.');
select alike(pg_temp.error_of(format('select conductor.create_schedule(%L, %L, %L)', 's', repeat('1,', 50000) || '1 * * * *', 'k')),
  'QC301 invalid cron expression ''1,1,1,%…(100009 bytes): at most 1000 bytes',
  'A cron line over 1000 bytes is refused with QC301 and echoed cut.');
select alike(pg_temp.error_of(format('select conductor.create_schedule(%L, %L, %L, timezone => %L)', 's', '* * * * *', 'k', repeat('Z', 100000))),
  'QC302 invalid timezone ''ZZZ%…(100000 bytes): at most 100 characters',
  'A time zone over 100 characters is refused with QC302 and echoed cut.');
select alike(pg_temp.error_of(format('select conductor.create_schedule(%L, %L, %L, catch_up => %L)', 's', '* * * * *', 'k', repeat('c', 100000))),
  'QC106 invalid catch_up ''ccc%…(100000 bytes)%', 'A catch_up of 100,000 characters is echoed cut.');
select alike(pg_temp.error_of(format('select conductor.update_schedule(%L)', repeat('n', 100000))),
  'QC203 schedule ''nnn%…(100000 bytes) does not exist', 'update_schedule echoes an unknown long name cut.');
select cmp_ok(length(pg_temp.error_of(format('select conductor.configure_kind(%L)', repeat('k', 100000)))),
  '<', 300, 'configure_kind refuses a kind of 100,000 characters in a short message.');
select is((select count(*) from conductor.schedules), 0::bigint, 'Nothing was stored.');

select * from finish();
rollback;
