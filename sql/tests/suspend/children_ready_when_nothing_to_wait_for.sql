-- A wait for children is 'ready' at once when there is nothing to wait for: no children,
-- all of them finished (children_all), or one of them finished (children_any). The outcome,
-- the children summary, is checkpointed under the wait's step, and the task keeps running.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

-- no children
select conductor.enqueue('k', '{}', 'susp-ready-none') as t0 \gset
select conductor_tests.claim_one('susp-ready-none') as a0 \gset
select results_eq(format($$select state, result from conductor.suspend(%s, 'join', 'children_all')$$, :a0),
  $$values ('ready'::text, '[]'::jsonb)$$,
  'children_all without children is ready with an empty summary.');
select results_eq(format($$select state, result from conductor.suspend(%s, 'any', 'children_any')$$, :a0),
  $$values ('ready'::text, '[]'::jsonb)$$,
  'children_any without children is ready with an empty summary.');
select is((select jsonb_object_agg(name, result) from conductor.steps where task_id = :t0),
  '{"join": [], "any": []}'::jsonb, 'Both outcomes are checkpointed under their steps.');

-- all children finished
select conductor.enqueue('k', '{}', 'susp-ready-all') as t1 \gset
select conductor_tests.claim_one('susp-ready-all') as a1 \gset
select conductor.spawn(:a1, 'c1', 'kid', '{}', 'susp-ready-all-kids') as c1 \gset
select conductor.spawn(:a1, 'c2', 'kid', '{}', 'susp-ready-all-kids') as c2 \gset
select conductor.complete(conductor_tests.claim_one('susp-ready-all-kids'), '"one"') as x1 \gset
select conductor.fail(conductor_tests.claim_one('susp-ready-all-kids'), 'boom') as x2 \gset
select results_eq(format($$select state, result from conductor.suspend(%s, 'join', 'children_all')$$, :a1),
  format($$values ('ready'::text, '[{"task_id": %s, "kind": "kid", "status": "succeeded", "result": "one", "error": null},
                                   {"task_id": %s, "kind": "kid", "status": "failed", "result": null, "error": "boom"}]'::jsonb)$$,
         :c1, :c2),
  'children_all with every child finished is ready with each child''s status, result and error, oldest first.');
select is((select result from conductor.steps where task_id = :t1 and name = 'join'),
  (select result from conductor.suspend(:a1, 'join', 'children_all')),
  'The summary is checkpointed, and asking again returns the checkpoint.');

-- one of two children finished
select conductor.enqueue('k', '{}', 'susp-ready-any') as t2 \gset
select conductor_tests.claim_one('susp-ready-any') as a2 \gset
select conductor.spawn(:a2, 'c1', 'kid', '{}', 'susp-ready-any-kids') as d1 \gset
select conductor.spawn(:a2, 'c2', 'kid', '{}', 'susp-ready-any-kids') as d2 \gset
select conductor.complete(conductor_tests.claim_one('susp-ready-any-kids'), '1') as y1 \gset
select is((select state from conductor.suspend(:a2, 'any', 'children_any')), 'ready',
  'children_any with one child finished is ready.');
select is((select (status, attempt_id, wait_for)::text from conductor.tasks where id = :t2),
  format('(running,%s,)', :a2), 'The task is still running under the same attempt.');

select * from finish();
rollback;
