-- send_update refuses a bad name (QC131, naming it), a payload over the limit (QC103), a task
-- that does not exist (QC203) and a finished one (QC217); nothing is sent.
begin;
select plan(6);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'update-bad') as t \gset
select throws_ok(format($$select conductor.send_update(%s, '', '{}')$$, :t), 'QC131',
  'invalid update name '''': a non-empty name of at most 200 bytes', 'An empty name is QC131.');
select throws_ok(format($$select conductor.send_update(%s, repeat('n', 201), '{}')$$, :t), 'QC131', null,
  'A name over 200 bytes is QC131.');
select throws_ok(format($$select conductor.send_update(%s, 'n', jsonb_build_object('x', repeat('x', 2000000)))$$, :t),
  'QC103', null, 'A payload over max_payload_bytes is QC103.');
select throws_ok($$select conductor.send_update(-1, 'n')$$, 'QC203', 'task -1 does not exist', 'An unknown task is QC203.');
select conductor.cancel(:t) as c \gset
select throws_ok(format($$select conductor.send_update(%s, 'n')$$, :t), 'QC217',
  format('task %s is cancelled: a finished run takes no updates', :t), 'A finished task is QC217.');
select is((select count(*) from conductor.updates where task_id = :t), 0::bigint, 'Nothing was sent.');

select * from finish();
rollback;
