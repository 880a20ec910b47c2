-- enqueue_many raises QC106 unless given a JSON array of objects, and writes nothing.
begin;
select plan(8);

create temp table before_count as select count(*) as n from conductor.tasks;

select throws_ok($$select conductor.enqueue_many('{"kind": "k"}')$$, 'QC106',
  'enqueue_many takes a JSON array of task objects, got object',
  'A single object instead of an array is refused with QC106, the message naming its type.');
select throws_ok($$select conductor.enqueue_many('"k"')$$, 'QC106',
  'enqueue_many takes a JSON array of task objects, got string',
  'A JSON string is refused with QC106.');
select throws_ok($$select conductor.enqueue_many('null')$$, 'QC106',
  'enqueue_many takes a JSON array of task objects, got null',
  'A JSON null is refused with QC106.');
select throws_ok($$select conductor.enqueue_many(NULL)$$, 'QC106',
  'enqueue_many takes a JSON array of task objects, got SQL NULL',
  'An SQL NULL is refused with QC106.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k"}, 1]')$$, 'QC106',
  'enqueue_many takes a JSON array of task objects; an element is not an object',
  'An array with an element that is not an object is refused with QC106.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k"}, ["kind", "k"]]')$$, 'QC106', NULL,
  'An array nested in the array is refused with QC106.');
select is_empty($$select * from conductor.enqueue_many('[]')$$,
  'An empty array writes nothing and answers no ids.');

select is((select count(*) from conductor.tasks) - (select n from before_count), 0::bigint,
  'None of the refused batches wrote a task.');

select * from finish();
rollback;
