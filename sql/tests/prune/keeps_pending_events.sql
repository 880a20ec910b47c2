-- prune() and apply_retention keep an event that is still pending: the reaper has not yet
-- seen every suspend that could have missed its emit end (functions/runs), and would wake
-- such a waiter with the event's payload. Once the reaper confirms it, it goes.
begin;
select plan(4);

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.emit_event('pr-pending', '{"ok": true}') as n \gset
set local conductor.fake_now = '2030-02-01 00:00:00+00';

select ok((select pending from conductor.events where name = 'pr-pending'),
  'An event emitted in this transaction is pending.');
select is(conductor.prune(older_than => interval '7 days'), 0::bigint,
  'prune keeps an old event while it is pending.');
update conductor.events set pending = false where name = 'pr-pending';  -- what reap does once it may
select is(conductor.prune(older_than => interval '7 days'), 1::bigint,
  'Once confirmed, the old event goes.');
select is_empty($$select from conductor.events where name = 'pr-pending'$$, 'It is gone.');

select * from finish();
rollback;
