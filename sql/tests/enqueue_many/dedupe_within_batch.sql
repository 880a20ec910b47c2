-- enqueue_many dedupes against unfinished tasks and within the batch itself.
begin;
select plan(5);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'dedupe-batch', dedupe_key => 'held') as holder \gset
create temp table before_count as select count(*) as n from conductor.tasks;

create temp table batch as
select e.id, e.n from conductor.enqueue_many($$[
  {"kind": "k", "queue": "dedupe-batch", "dedupe_key": "fresh"},
  {"kind": "k", "queue": "dedupe-batch"},
  {"kind": "k", "queue": "dedupe-batch", "dedupe_key": "fresh", "payload": {"second": true}},
  {"kind": "k", "queue": "dedupe-batch", "dedupe_key": "held"},
  {"kind": "k", "queue": "dedupe-batch", "dedupe_key": "fresh"}
]$$) with ordinality as e(id, n);

select is((select count(*) from batch), 5::bigint, 'Every object gets an id in the answer.');
select is((select array_agg(id order by n) from batch where n in (1, 3, 5)),
  array_fill((select id from batch where n = 1), array[3]),
  'Later objects with a key first used earlier in the batch get the first one''s id.');
select is((select id from batch where n = 4), :holder::bigint,
  'An object whose key an existing unfinished task holds gets the holder''s id.');
select is((select count(*) from conductor.tasks) - (select n from before_count), 2::bigint,
  'Only two tasks were written: the first ''fresh'' and the one without a key.');
select is((select payload from conductor.tasks where id = (select id from batch where n = 1)), '{}'::jsonb,
  'The first object of a key wins; the duplicate''s payload is not stored.');

select * from finish();
rollback;
