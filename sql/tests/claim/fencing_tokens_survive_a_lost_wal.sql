-- A crash that loses WAL (a claim committed without waiting for its flush) also
-- loses the attempt-id sequence's advance: recovery leaves the sequence below
-- ids already handed out, and empties the unlogged conductor.claim_epoch. The
-- first claim that finds it empty moves the sequence 10^9 ahead, writes the row
-- and makes its own commit durable; the claims after it go on from there.
-- Staged in one session: the row deleted and the sequence set back below an
-- id a claim was given, as recovery would leave them.
begin;
select plan(7);
\ir ../helpers.psql

select is((select count(*) from conductor.claim_epoch), 1::bigint,
  'A deployed schema has its epoch row: nothing was lost before.');

select conductor.enqueue('k', '{}', 'epoch-q') from generate_series(1, 3);
select attempt_id as lost from conductor.claim('epoch-w', array['epoch-q'], 1) \gset

-- the crash: the row gone, the sequence back where the last flushed WAL left it
delete from conductor.claim_epoch;
select setval('conductor.attempts_id_seq', :lost - 1);

set local synchronous_commit = off;
select attempt_id as after_crash from conductor.claim('epoch-w', array['epoch-q'], 1, durable => false) \gset

select cmp_ok(:after_crash::bigint, '>', :lost::bigint + 999999999,
  'The first claim after the loss gets an id 10^9 past the sequence''s value, past every id handed out before.');
select is((select count(*) from conductor.claim_epoch), 1::bigint, 'It wrote the epoch row again.');
select is(current_setting('synchronous_commit'), 'on',
  'Its transaction commits durably, whatever the session or durable => false asked: the move must reach disk first.');

select attempt_id as next from conductor.claim('epoch-w', array['epoch-q'], 1) \gset
select is(:next::bigint, :after_crash::bigint + 1, 'The claim after it goes on from there: no second move.');

select is_empty(
  $$select id from conductor.attempts group by id having count(*) > 1$$,
  'No attempt id was handed out twice.');
select is((select count(*) from conductor.attempts where id = :lost), 1::bigint,
  'The id given before the loss still names its own attempt only.');

select * from finish();
rollback;
