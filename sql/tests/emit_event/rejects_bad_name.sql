-- emit_event needs a non-empty event name of at most 1000 bytes (QC106), and records nothing otherwise.
begin;
select plan(4);
\ir ../helpers.psql

create temp table before_events as select count(*) as n from conductor.events;
select throws_ok($$select conductor.emit_event('')$$, 'QC106', NULL, 'An empty event name is refused with QC106.');
select throws_ok($$select conductor.emit_event(NULL)$$, 'QC106', NULL, 'A NULL event name is refused with QC106.');
select throws_ok($$select conductor.emit_event(repeat('e', 1001))$$, 'QC106', NULL,
  'An event name over 1000 bytes is refused with QC106.');
select is((select count(*) from conductor.events) - (select n from before_events), 0::bigint,
  'The refused emits recorded no event.');

select * from finish();
rollback;
