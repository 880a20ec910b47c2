-- create_schedule checks every other argument too, each with its own SQLSTATE.
begin;
select plan(9);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select throws_ok($$select conductor.create_schedule('', '* * * * *', 'k')$$, 'QC106', NULL,
  'An empty name is refused with QC106.');
select throws_ok($$select conductor.create_schedule('has space', '* * * * *', 'k')$$, 'QC106', NULL,
  'A name with a space is refused with QC106.');
select throws_ok($$select conductor.create_schedule('s', '* * * * *', '')$$, 'QC101', NULL,
  'An empty kind is refused with QC101.');
select throws_ok($$select conductor.create_schedule('s', '* * * * *', 'k', '[1]')$$, 'QC102', NULL,
  'A payload that is not a JSON object is refused with QC102.');
select throws_ok($$select conductor.create_schedule('s', '* * * * *', 'k', queue => ' q')$$, 'QC104', NULL,
  'An invalid queue name is refused with QC104.');
select throws_ok($$select conductor.create_schedule('s', '* * * * *', 'k', catch_up => 'some')$$, 'QC106', NULL,
  'A catch_up other than once or all is refused with QC106.');
select throws_ok($$select conductor.create_schedule('s', '* * * * *', 'k', catch_up_limit => 0)$$, 'QC106', NULL,
  'A catch_up_limit below 1 is refused with QC106.');
select throws_ok($$select conductor.create_schedule('s', '* * * * *', 'k', max_attempts => 0)$$, 'QC106', NULL,
  'A max_attempts below 1 is refused with QC106.');
select is((select count(*) from conductor.schedules), 0::bigint, 'Nothing was stored.');

select * from finish();
rollback;
