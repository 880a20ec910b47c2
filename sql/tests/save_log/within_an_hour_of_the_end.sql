-- How long a worker may still ship an attempt's lines (issue 25): while the attempt runs,
-- however long, and for one hour after it ended (a worker sends the lines before the
-- outcome; a handler that runs on after its time limit, a cancellation or a lost lease sends
-- its last lines when it returns, and a reconnecting worker sends them late); later, QC204
-- and nothing stored. The same for an admin.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2031-07-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;

select conductor.enqueue('k', '{}', 'late') as task \gset
select conductor.enqueue('k', '{}', 'late') as task2 \gset
set local role t_worker;
select conductor.register_worker('late-w') as r \gset
select c.attempt_id as att from conductor.claim('late-w', array['late'], 1) c \gset
select c.attempt_id as open_att from conductor.claim('late-w', array['late'], 1) c \gset
select conductor.complete(:att) as done \gset

set local conductor.fake_now = '2031-07-01 00:59:59+00';
select lives_ok(format($$select conductor.save_log(%s, '[{"message": "within the hour"}]')$$, :att),
  'Lines an hour less a second after the end are taken.');
set local conductor.fake_now = '2031-07-01 01:00:01+00';
select throws_ok(format($$select conductor.save_log(%s, '[{"message": "too late"}]')$$, :att), 'QC204',
  format('attempt %s ended at 2031-07-01 00:00:00+00, over an hour ago: its log lines can no longer be added', :att),
  'An hour and a second after, they are refused with QC204.');
select lives_ok(format($$select conductor.save_log(%s, '[{"message": "still running"}]')$$, :open_att),
  'An attempt that still runs takes lines however long it has run.');
reset role;
select is((select lines::text from conductor.attempt_logs where attempt_id = :att), '[{"message": "within the hour"}]',
  'The late lines were not stored.');
select throws_ok(format($$select conductor.save_log(%s, '[{"message": "admin"}]')$$, :att), 'QC204', NULL,
  'Nor an admin''s: the hour is the attempt''s rule, not an ownership one.');
set local role t_worker;
select conductor.fail(:open_att, 'boom') as failed \gset
set local conductor.fake_now = '2031-07-01 01:30:00+00';
select lives_ok(format($$select conductor.save_log(%s, '[{"message": "after the failure"}]')$$, :open_att),
  'The hour runs from the end of each attempt.');
reset role;

select * from finish();
rollback;
