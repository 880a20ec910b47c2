-- Dependencies that form a cycle are refused with QC129, naming the members on the cycle or
-- after it (they could never run); a member after itself is a cycle. Nothing is written.
begin;
select plan(4);
\ir ../helpers.psql
set local role conductor_client;

select throws_ok($$select * from conductor.enqueue_graph('[{"name": "a", "kind": "k", "queue": "graph-cycle"},
                                                          {"name": "b", "kind": "k", "after": ["a", "d"]},
                                                          {"name": "c", "kind": "k", "after": ["b"]},
                                                          {"name": "d", "kind": "k", "after": ["c"]},
                                                          {"name": "e", "kind": "k", "after": ["d"]}]')$$,
  'QC129', 'invalid graph: the dependencies of ''b, c, d, e'' form a cycle (these members are on one or after one)',
  'A cycle b -> c -> d -> b is refused, naming b, c, d and e after it.');
select throws_ok($$select * from conductor.enqueue_graph('[{"name": "a", "kind": "k", "after": ["a"]}]')$$,
  'QC129', 'invalid graph: the dependencies of ''a'' form a cycle (these members are on one or after one)',
  'A member after itself is refused.');
select lives_ok($$select * from conductor.enqueue_graph('[{"name": "a", "kind": "k", "queue": "graph-cycle-ok"},
                                                         {"name": "b", "kind": "k", "after": ["a", "a"]}]')$$,
  'A name given twice in after is one dependency, no cycle.');
reset role;
select is_empty($$select from conductor.tasks where queue = 'graph-cycle'$$, 'No task of the refused graphs was written.');

select * from finish();
rollback;
