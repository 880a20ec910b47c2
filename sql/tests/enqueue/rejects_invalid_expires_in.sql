-- expires_in is more than 0 and at most 30 days: QC106, the message naming the value, from
-- enqueue, enqueue_many (also for a value that is no interval), spawn and configure_kind.
begin;
select plan(8);
\ir ../helpers.psql

select throws_ok($$select conductor.enqueue('exp-bad', '{}', 'q', expires_in => '0 seconds')$$,
  'QC106', 'invalid expires_in 00:00:00 for kind ''exp-bad'': it must be more than 0 and at most 30 days',
  'enqueue refuses an expires_in of 0, naming it.');
select throws_ok($$select conductor.enqueue('exp-bad', '{}', 'q', expires_in => '-1 minute')$$,
  'QC106', 'invalid expires_in -00:01:00 for kind ''exp-bad'': it must be more than 0 and at most 30 days',
  'enqueue refuses a negative expires_in.');
select throws_ok($$select conductor.enqueue('exp-bad', '{}', 'q', expires_in => '31 days')$$,
  'QC106', 'invalid expires_in 31 days for kind ''exp-bad'': it must be more than 0 and at most 30 days',
  'enqueue refuses an expires_in over 30 days.');
select lives_ok($$select conductor.enqueue('exp-bad', '{}', 'q', expires_in => '30 days')$$,
  '30 days is allowed.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "exp-bad", "expires_in": "0"}]')$$,
  'QC106', 'invalid expires_in 00:00:00 for kind ''exp-bad'': it must be more than 0 and at most 30 days',
  'enqueue_many applies the same rule.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "exp-bad", "expires_in": "soon"}]')$$,
  'QC106', 'invalid expires_in ''soon'' in task #1 of the batch: it must be an interval',
  'enqueue_many names an expires_in that is no interval.');
select throws_ok($$select conductor.configure_kind('exp-bad', expires_in => '0 seconds')$$,
  'QC106', 'invalid expires_in 00:00:00 for kind ''exp-bad'': it must be more than 0 and at most 30 days',
  'configure_kind applies the same rule to a kind''s default.');
select is(conductor._spec_problem(conductor_tests.spec(expires_in => '-1 second')), 'expires_in',
  '_spec_problem names expires_in as the problem.');

select * from finish();
rollback;
