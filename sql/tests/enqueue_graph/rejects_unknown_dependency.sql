-- A member that runs after a name no member has is refused with QC128, naming both; nothing
-- is written (the members before it in the array neither).
begin;
select plan(3);
\ir ../helpers.psql
set local role conductor_client;

select throws_ok($$select * from conductor.enqueue_graph('[{"name": "a", "kind": "k", "queue": "graph-unknown"},
                                                          {"name": "b", "kind": "k", "after": ["a", "z"]}]')$$,
  'QC128', 'invalid graph: member ''b'' runs after ''z'', which is not a member''s name',
  'An unknown dependency is refused, naming the member and the name.');
select throws_ok($$select * from conductor.enqueue_graph('[{"name": "b", "kind": "k", "after": [1]}]')$$,
  'QC128', 'invalid graph: member ''b'' runs after ''1'', which is not a member''s name',
  'A dependency that is not a string is refused too.');
reset role;
select is_empty($$select from conductor.tasks where queue = 'graph-unknown'$$, 'No task was written.');

select * from finish();
rollback;
