-- reply_update refuses an update sent to another task (QC218), an unknown update (QC203), an
-- attempt that no longer holds its task (QC201), a reply over max_result_bytes (QC107); and
-- update_reply an unknown update (QC203). Nothing is stored.
begin;
select plan(6);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'reply-bad') as t1 \gset
select conductor.enqueue('k', '{}', 'reply-bad') as t2 \gset
select conductor_tests.claim_one('reply-bad') as a1 \gset
select conductor.send_update(:t2, 'ask') as u2 \gset
select conductor.send_update(:t1, 'ask') as u1 \gset

select throws_ok(format($$select conductor.reply_update(%s, %s, '1')$$, :a1, :u2), 'QC218',
  format('update %s was sent to task %s, not to task %s (attempt %s)', :u2, :t2, :t1, :a1),
  'A reply to another task''s update is QC218.');
select throws_ok(format($$select conductor.reply_update(%s, -1, '1')$$, :a1), 'QC203', 'update -1 does not exist',
  'An unknown update is QC203.');
select throws_ok(format($$select conductor.reply_update(%s, %s, to_jsonb(repeat('x', 2000000)))$$, :a1, :u1), 'QC107', null,
  'A reply over max_result_bytes is QC107.');
select conductor.complete(:a1, '{}') as c \gset
select throws_ok(format($$select conductor.reply_update(%s, %s, '1')$$, :a1, :u1), 'QC201', null,
  'An attempt that finished cannot reply: QC201.');
select throws_ok($$select * from conductor.update_reply(-1)$$, 'QC203', 'update -1 does not exist',
  'update_reply of an unknown update is QC203.');
select is((select count(*) from conductor.updates where replied_at is not null), 0::bigint, 'No reply was stored.');

select * from finish();
rollback;
