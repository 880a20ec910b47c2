-- suspend's and save_step's messages echo a caller's value as conductor._echo cuts it (its
-- first 100 characters, then its length): v0.2.0 echoed a wait_for, an event name or a step
-- name of 100000 bytes whole. As a worker login; the values are refused before any lookup.
begin;
select plan(4);
\ir ../helpers.psql
create role t_worker;
grant conductor_worker to t_worker;

create function pg_temp.error_of(sql text) returns text language plpgsql as $$
begin
  execute sql;
  return null;
exception when others then
  return sqlstate || ' ' || sqlerrm;
end
$$;
grant execute on function pg_temp.error_of(text) to t_worker;
set local role t_worker;

select is(pg_temp.error_of($$select * from conductor.suspend(0, 'w', repeat('x', 100000))$$),
  'QC106 invalid wait_for ''' || repeat('x', 100) || '''…(100000 bytes): ''children_all'', ''children_any'', ''event'' or ''sleep''',
  'A wait_for of 100000 bytes is cut.');
select is(pg_temp.error_of($$select * from conductor.suspend(0, 'w', 'event', event => repeat('e', 100000))$$),
  'QC106 invalid event name ''' || repeat('e', 100) || '''…(100000 bytes): a non-empty name of at most 1000 bytes',
  'An event name of 100000 bytes is cut.');
select is(pg_temp.error_of($$select * from conductor.suspend(0, repeat('s', 100000), 'sleep', duration => '1 s')$$),
  'QC106 invalid step name ''' || repeat('s', 100) || '''…(100000 bytes): a non-empty name of at most 1000 bytes',
  'A step name of 100000 bytes is cut.');
select is(pg_temp.error_of($$select conductor.save_step(0, repeat('s', 100000), '1')$$),
  'QC106 invalid step name ''' || repeat('s', 100) || '''…(100000 bytes): a non-empty name of at most 1000 bytes',
  'save_step cuts it too.');

select * from finish();
rollback;
