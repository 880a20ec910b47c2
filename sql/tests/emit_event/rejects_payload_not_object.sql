-- emit_event takes a JSON object as payload, as enqueue does: an array, a string, a number or
-- JSON null is refused with QC102, recording nothing and waking nobody; SQL NULL means no
-- payload and is recorded as {} (the default).
begin;
select plan(7);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'emit-shape') as t \gset
select conductor_tests.claim_one('emit-shape') as a \gset
select state from conductor.suspend(:a, 'w', 'event', 'emit-shape') \gset

select throws_ok($$select conductor.emit_event('emit-shape', '[1, 2]')$$, 'QC102',
  'invalid payload for event ''emit-shape'': a payload is a JSON object, got array',
  'An array payload is refused with QC102, the message naming the event and what it got.');
select throws_ok($$select conductor.emit_event('emit-shape', '"yes"')$$, 'QC102', NULL, 'A string payload is refused with QC102.');
select throws_ok($$select conductor.emit_event('emit-shape', '7')$$, 'QC102', NULL, 'A number payload is refused with QC102.');
select throws_ok($$select conductor.emit_event('emit-shape', 'null')$$, 'QC102', NULL, 'A JSON null payload is refused with QC102.');
select is((select (status, (select count(*) from conductor.events where name = 'emit-shape'))::text
             from conductor.tasks where id = :t), '(waiting,0)',
  'The refused emits recorded no event and woke nobody.');

select is(conductor.emit_event('emit-shape', NULL), 1, 'An emit with SQL NULL as payload wakes the waiter.');
select is((select payload from conductor.events where name = 'emit-shape'), '{}'::jsonb,
  'SQL NULL is recorded as {}, as when the payload is left out.');

select * from finish();
rollback;
