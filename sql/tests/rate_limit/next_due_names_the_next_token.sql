-- next_due answers when a rate-limited queue or kind with ready tasks gets its next token,
-- so an idle worker wakes then instead of at its poll: at now + (1 - tokens) / per_second.
-- With a token in the bucket already, now + 50 ms (the worker's claim missed it: it looks
-- again shortly, not at its poll); not without ready tasks the worker could start, not for other queues or kinds; an earlier due task still answers
-- first. A paused queue's tasks wake nobody. Asked as conductor_worker.
begin;
select plan(10);
\ir ../helpers.psql
set local conductor.fake_now = '2092-01-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;

select conductor.set_rate_limit(queue => 'nd-rl', per_second => 2, burst => 1) as s1 \gset
select conductor.enqueue('k', '{}', 'nd-rl') as t1 \gset
select conductor.enqueue('k', '{}', 'nd-rl') as t2 \gset
select conductor.enqueue('k', '{}', 'nd-rl', run_at => '2092-01-01 00:00:10+00') as later \gset

set local role t_worker;
select is(conductor.next_due(array['nd-rl']), '2092-01-01 00:00:00.05+00'::timestamptz,
  'With a token in the bucket and ready tasks, 50 ms: a claim that came back short looks again soon.');
select is((select count(*) from conductor.claim('w1', array['nd-rl'], 10)), 1::bigint, 'One starts, the bucket is dry.');
select is(conductor.next_due(array['nd-rl']), '2092-01-01 00:00:00.5+00'::timestamptz,
  'Dry, with a ready task: the next token, 1 / per_second later.');
select is(conductor.next_due(), '2092-01-01 00:00:00.5+00'::timestamptz, 'For a worker of every queue too.');
select is(conductor.next_due(array['nd-rl'], array['other-kind']), '2092-01-01 00:00:10+00'::timestamptz,
  'Not for a worker whose kinds have no ready task there.');
set local conductor.fake_now = '2092-01-01 00:00:00.2+00';
select is(conductor.next_due(array['nd-rl']), '2092-01-01 00:00:00.5+00'::timestamptz,
  'Partly refilled (0.4 token), the same time: the rest of the token.');
reset role;

-- a kind's limit, its tasks in a queue of its own
select conductor.set_rate_limit(kind => 'nd-A', per_second => 0.1) as s2 \gset
select conductor.enqueue('nd-A', '{}', 'nd-kq') as a1 \gset
select conductor.enqueue('nd-A', '{}', 'nd-kq') as a2 \gset
set local role t_worker;
select count(*) from conductor.claim('w1', array['nd-kq'], 10) \gset
select is(conductor.next_due(array['nd-kq'], array['nd-A']), '2092-01-01 00:00:10.2+00'::timestamptz,
  'A dry kind with a ready task: its next token, 10 s at 0.1 per second.');
select is(conductor.next_due(array['nd-rl-none']), null::timestamptz,
  'Not for a worker of other queues.');
reset role;
delete from conductor.tasks where id = :a2;
set local role t_worker;
select is(conductor.next_due(array['nd-kq'], array['nd-A']), null::timestamptz,
  'Nothing ready of the kind: no wake for its token.');
reset role;

select conductor.pause_queue('nd-rl') as p \gset
set local role t_worker;
select is(conductor.next_due(array['nd-rl']), null::timestamptz,
  'A paused queue wakes nobody: neither its token nor its due task.');
reset role;

select * from finish();
rollback;
