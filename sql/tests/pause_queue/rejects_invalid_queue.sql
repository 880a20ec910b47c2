-- pause_queue and resume_queue refuse a queue name enqueue would refuse, with enqueue's
-- QC104 and a message naming the value; nothing is written.
begin;
select plan(8);
\ir ../helpers.psql

select throws_ok($$select conductor.pause_queue(null)$$, 'QC104', NULL,
  'pause_queue refuses a NULL queue with QC104.');
select throws_ok($$select conductor.pause_queue('')$$, 'QC104', NULL,
  'pause_queue refuses an empty queue name.');
select throws_ok($$select conductor.pause_queue('has space')$$, 'QC104',
  'invalid queue ''has space'': a queue name is 1-100 letters, digits and _ . : / -, starting with a letter or digit',
  'pause_queue refuses a name with a space, the message naming it.');
select throws_ok(format('select conductor.pause_queue(%L)', repeat('q', 101)), 'QC104', NULL,
  'pause_queue refuses a name over 100 characters.');
select throws_ok($$select conductor.resume_queue(null)$$, 'QC104', NULL,
  'resume_queue refuses a NULL queue with QC104.');
select throws_ok($$select conductor.resume_queue('-dash-first')$$, 'QC104', NULL,
  'resume_queue refuses a name not starting with a letter or digit.');
select is((select count(*) from conductor.paused_queues where queue in ('', 'has space', '-dash-first')), 0::bigint,
  'Nothing was written.');
select lives_ok($$select conductor.pause_queue('a.b:c/d-e_f')$$,
  'Every character enqueue accepts in a queue name is accepted.');

select * from finish();
rollback;
