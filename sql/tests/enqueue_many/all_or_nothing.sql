-- One bad task in a batch raises as enqueue does, and none of the batch is written.
begin;
select plan(6);

update conductor.settings set max_payload_bytes = 100;
create temp table before_count as select count(*) as n from conductor.tasks;

select throws_ok($$select conductor.enqueue_many('[{"kind": "ok"}, {"kind": ""}]')$$, 'QC101', NULL,
  'An empty kind in the second object is refused with QC101.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "ok"}, {"queue": "q"}]')$$, 'QC101',
  'invalid kind NULL: a kind is a non-empty name of at most 200 characters without surrounding spaces, '
  || 'control or format characters (tab, newline, U+202E, ...) or any of < > & " '' `',
  'An object without a kind is refused with QC101.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "ok"}, {"kind": "k", "payload": [1]}]')$$, 'QC102', NULL,
  'An array payload in a batch is refused with QC102.');
select throws_ok(format('select conductor.enqueue_many(%L)',
    jsonb_build_array(jsonb_build_object('kind', 'ok'),
                      jsonb_build_object('kind', 'big', 'payload', jsonb_build_object('b', repeat('x', 200))))),
  'QC103', NULL,
  'An oversized payload in a batch is refused with QC103.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "ok"}, {"kind": "k", "queue": "bad queue"}]')$$, 'QC104', NULL,
  'A bad queue name in a batch is refused with QC104.');

select is((select count(*) from conductor.tasks) - (select n from before_count), 0::bigint,
  'The valid first object of each refused batch was not written either.');

select * from finish();
rollback;
