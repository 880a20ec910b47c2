-- A rewound spawn step's child is cancelled (with its descendants) when unfinished and
-- detached from the run (parent_id NULL, root_id kept): the replay's spawn enqueues a new
-- child and a wait for children counts only that one. A spawn step kept keeps its child.
begin;
select plan(8);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('root', '{}', 'rewind-kids') as t \gset
select conductor_tests.claim_one('rewind-kids') as a \gset
select conductor.spawn(:a, 'first', 'kid', '{}', 'rewind-kids-1') as k1 \gset
select conductor.spawn(:a, 'second', 'kid', '{}', 'rewind-kids-2') as k2 \gset
select conductor_tests.claim_one('rewind-kids-2') as ka \gset
select conductor.spawn(:ka, 'grand', 'kid', '{}', 'rewind-kids-3') as g \gset
select conductor.fail(:a, 'boom') as f \gset
select is((select array_agg(status::text order by id) from conductor.tasks where id in (:k1, :k2, :g)),
  array['queued', 'running', 'queued'], 'Setup: the run failed; its children and grandchild are unfinished.');

select is(conductor.rewind(:t, 'second'), :t::bigint, 'The run is rewound from its second spawn.');
select is((select (status, parent_id, root_id)::text from conductor.tasks where id = :k2), format('(cancelled,,%s)', :t),
  'The rewound spawn''s running child is cancelled and detached, still in the run (root_id).');
select is((select status::text from conductor.tasks where id = :g), 'cancelled', 'Its descendants are cancelled with it.');
select is((select (status, parent_id)::text from conductor.tasks where id = :k1), format('(queued,%s)', :t),
  'The kept spawn''s child is untouched and still the run''s.');
select is((select outcome from conductor.attempts where id = :ka), 'cancelled',
  'The running child''s attempt is closed as cancelled (its worker learns it at its next heartbeat).');

select conductor_tests.claim_one('rewind-kids') as a2 \gset
select conductor.spawn(:a2, 'second', 'kid', '{}', 'rewind-kids-2') as k3 \gset
select isnt(:k3::bigint, :k2::bigint, 'The replay''s spawn of the rewound step enqueues a new child.');
select is((select array_agg(task_id order by task_id) from conductor.children(:t)), array[:k1, :k3]::bigint[],
  'The run''s children are the kept one and the new one, not the detached one.');

select * from finish();
rollback;
