-- concurrency_limit is the caller's, else the kind's (configure_kind), else NULL (1): the
-- kind's applies to its keyed tasks only, whether the key is the caller's or the kind's,
-- through enqueue, enqueue_many and spawn alike.
begin;
select plan(8);
\ir ../helpers.psql

select conductor.configure_kind('lim.k', concurrency_limit => 4);
select conductor.configure_kind('lim.keyed', concurrency_key => 'kind-key', concurrency_limit => 2);

select conductor.enqueue('lim.k', concurrency_key => 'c1') as kind_limit \gset
select conductor.enqueue('lim.k', concurrency_key => 'c1', concurrency_limit => 9) as caller_limit \gset
select conductor.enqueue('lim.k') as unkeyed \gset
select conductor.enqueue('lim.keyed') as kind_key \gset
select conductor.enqueue('other', concurrency_key => 'c1') as no_limit \gset
select array_agg(e.id order by e.n) as many
  from conductor.enqueue_many(
    '[{"kind": "lim.k", "concurrency_key": "c2"}, {"kind": "lim.k", "concurrency_key": "c2", "concurrency_limit": 7},
      {"kind": "lim.k"}]') with ordinality e(id, n) \gset
select conductor.enqueue('parent', '{}', 'lim-parent-q') as parent \gset
select conductor_tests.claim_one('lim-parent-q') as pa \gset
select conductor.spawn(:pa, 'child', 'lim.k', concurrency_key => 'c3', concurrency_limit => 5) as child \gset

select is((select concurrency_limit from conductor.kinds where kind = 'lim.k'), 4,
  'configure_kind stores the kind''s limit, without a key of its own (keys come with the tasks).');
select is((select concurrency_limit from conductor.tasks where id = :kind_limit), 4,
  'A keyed task of the kind enqueued without a limit takes the kind''s.');
select is((select concurrency_limit from conductor.tasks where id = :caller_limit), 9,
  'The caller''s limit wins over the kind''s.');
select is((select concurrency_limit from conductor.tasks where id = :unkeyed), null::integer,
  'An unkeyed task of the kind stores no limit: the kind''s applies to keyed tasks only.');
select is((select concurrency_limit from conductor.tasks where id = :kind_key), 2,
  'A task taking the kind''s key takes the kind''s limit too.');
select is((select concurrency_limit from conductor.tasks where id = :no_limit), null::integer,
  'A keyed task of a kind without a limit stores NULL: 1 at a time.');
select results_eq(
  format('select t.concurrency_limit from unnest(%L::bigint[]) with ordinality e(id, n) join conductor.tasks t on t.id = e.id order by e.n', :'many'),
  $$values (4), (7), (null::integer)$$,
  'enqueue_many resolves each object''s concurrency_limit the same way.');
select is((select concurrency_limit from conductor.tasks where id = :child), 5,
  'spawn passes concurrency_limit to the child.');

select * from finish();
rollback;
