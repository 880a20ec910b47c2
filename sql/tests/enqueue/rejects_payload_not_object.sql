-- enqueue raises QC102 when the payload is not a JSON object, and writes nothing.
begin;
select plan(8);

create temp table before_count as select count(*) as n from conductor.tasks;

select throws_ok($$select conductor.enqueue('k', '[1, 2]')$$, 'QC102',
  'invalid payload for kind ''k'': a payload is a JSON object, got array',
  'A JSON array payload is refused with QC102, the message naming its type.');
select throws_ok($$select conductor.enqueue('k', '"text"')$$, 'QC102',
  'invalid payload for kind ''k'': a payload is a JSON object, got string',
  'A JSON string payload is refused with QC102.');
select throws_ok($$select conductor.enqueue('k', 'null'::jsonb)$$, 'QC102',
  'invalid payload for kind ''k'': a payload is a JSON object, got null',
  'A JSON null payload is refused with QC102.');
select throws_ok($$select conductor.enqueue('k', NULL)$$, 'QC102',
  'invalid payload for kind ''k'': a payload is a JSON object, got SQL NULL',
  'An SQL NULL payload is refused with QC102.');
select throws_ok($$select conductor.enqueue('k', '42')$$, 'QC102', NULL,
  'A JSON number payload is refused with QC102.');
select throws_ok($$select conductor.enqueue('k', 'true')$$, 'QC102', NULL,
  'A JSON boolean payload is refused with QC102.');
select lives_ok($$select conductor.enqueue('k', '{}')$$, 'An empty JSON object is a valid payload.');

select is((select count(*) from conductor.tasks) - (select n from before_count), 1::bigint,
  'Only the task with an object payload was written.');

select * from finish();
rollback;
