-- A second create_schedule of the same name without replace raises QC206 and changes nothing.
begin;
select plan(4);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('dup', '0 9 * * *', 'first', '{"a": 1}') as c \gset
create temp table before as select to_jsonb(s) as row from conductor.schedules s where name = 'dup';

set local conductor.fake_now = '2030-01-01 01:00:00+00';
select throws_ok($$select conductor.create_schedule('dup', '0 10 * * *', 'second')$$, 'QC206', NULL,
  'Creating a schedule whose name exists raises QC206.');
select throws_ok($$select conductor.create_schedule('dup', '0 9 * * *', 'first', '{"a": 1}', replace => false)$$,
  'QC206', NULL, 'Even an identical schedule raises QC206 when replace is false.');
select throws_ok($$select conductor.create_schedule('dup', '0 10 * * *', 'second', replace => NULL)$$,
  'QC206', NULL, 'replace => NULL means not said, false: QC206.');
select is((select to_jsonb(s) from conductor.schedules s where name = 'dup'), (select row from before),
  'The existing schedule is unchanged.');

select * from finish();
rollback;
