-- lead_key is a stable 64-bit hash of the lock's name: the same in every session and
-- release, different for different names.
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;

select is(conductor.lead_key('scheduler'), -3828207415400201568::bigint,
  'lead_key(''scheduler'') is the documented fixed value: hashtextextended(''conductor.lead:scheduler'', 0).');
select is(conductor.lead_key('reaper'), 1668377895301603720::bigint,
  'lead_key(''reaper'') is its fixed value too.');
select isnt(conductor.lead_key('scheduler'), conductor.lead_key('reaper'),
  'Different names have different keys.');
select is(
  (select k from dblink(conductor_tests.conninfo(), 'select conductor.lead_key(''scheduler'')') as x(k bigint)),
  conductor.lead_key('scheduler'), 'Another session computes the same key.');
select isnt(conductor.lead_key('event:x'), pg_catalog.hashtextextended('conductor:event:x', 0),
  'A leader named event:x does not take emit_event''s lock of event x.');
select throws_ok($$select conductor.try_lead('')$$, 'QC106', NULL, 'try_lead refuses an empty name with QC106.');

select * from finish();
rollback;
