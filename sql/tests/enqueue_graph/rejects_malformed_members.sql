-- enqueue_graph refuses a malformed declaration with QC127, naming the member and the value,
-- before it writes anything: not a non-empty array of objects, a name missing, empty, too long
-- or given twice, an after that is not an array, a run_on_failure that is not a boolean, a
-- member with a dedupe_key or a parent_id, a callback whose payload holds the key "graph".
begin;
select plan(11);
\ir ../helpers.psql
select count(*) as graphs_before from conductor.graphs \gset
set local role conductor_client;

select throws_ok($$select * from conductor.enqueue_graph('{"name": "a"}')$$, 'QC127',
  'enqueue_graph takes a non-empty JSON array of task objects, got ''{"name": "a"}''',
  'An object for tasks is refused.');
select throws_ok($$select * from conductor.enqueue_graph('[]')$$, 'QC127',
  'enqueue_graph takes a non-empty JSON array of task objects, got ''[]''',
  'An empty graph is refused.');
select throws_ok($$select * from conductor.enqueue_graph('[{"name": "a", "kind": "k"}, 3]')$$, 'QC127',
  'invalid graph member #2 is not a JSON object', 'An element that is not an object is refused, by its place.');
select throws_ok($$select * from conductor.enqueue_graph('[{"kind": "k"}]')$$, 'QC127',
  'invalid graph member #1 name missing: a name is a string of 1 to 200 characters, none a control character',
  'A member without a name is refused.');
select throws_ok($$select * from conductor.enqueue_graph('[{"name": "a\u0007b", "kind": "k"}]')$$, 'QC127',
  'invalid graph member #1 name E''"a\\u0007b"'': a name is a string of 1 to 200 characters, none a control character',
  'A name with a control character is refused.');
select throws_ok($$select * from conductor.enqueue_graph('[{"name": "a", "kind": "k"}, {"name": "a", "kind": "k"}]')$$,
  'QC127', 'invalid graph: the name ''a'' is given to more than one member', 'A name given twice is refused.');
select throws_ok($$select * from conductor.enqueue_graph('[{"name": "b", "kind": "k", "after": "a"}]')$$, 'QC127',
  'invalid graph member #1 (''b''): after ''"a"'' is not a JSON array of names', 'An after that is not an array is refused.');
select throws_ok($$select * from conductor.enqueue_graph('[{"name": "b", "kind": "k", "run_on_failure": "yes"}]')$$,
  'QC127', 'invalid graph member #1 (''b''): run_on_failure ''"yes"'' is not true or false',
  'A run_on_failure that is not a boolean is refused.');
select throws_ok($$select * from conductor.enqueue_graph('[{"name": "b", "kind": "k", "dedupe_key": "x"}]')$$, 'QC127',
  'invalid graph member #1 (''b''): a member takes no dedupe_key, dedupe option or parent_id (it is a new task, a root of its own)',
  'A member with a dedupe_key is refused: it could be another, existing task.');
select throws_ok($$select * from conductor.enqueue_graph('[{"name": "b", "kind": "k"}]',
                                                        on_complete => '{"kind": "done", "payload": {"graph": 1}}')$$,
  'QC127', 'invalid on_complete callback ''{"kind": "done", "payload": {"graph": 1}}'': a task object without dedupe options, '
           'parent_id, name, after, run_on_failure or a payload key "graph" (the engine writes it)',
  'A callback whose payload holds the key "graph" is refused.');
reset role;
select is((select count(*) from conductor.graphs), :graphs_before::bigint, 'No graph was written.');

select * from finish();
rollback;
