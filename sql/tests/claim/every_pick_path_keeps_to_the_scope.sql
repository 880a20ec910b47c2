-- conductor._pick is every claim's one pick, and its three plan shapes (one queue, several or
-- all queues, with concurrency keys; from the head or from a remembered position) each spell
-- the rule of a ready task: queued, due, of the scope's queues and kinds and of none of its
-- not_queues and not_kinds, unkeyed or of a locked key with nothing running. Each path takes
-- exactly the tasks a plain reading of that rule names (max_tasks is large enough for all),
-- so no shape can drift from the others.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';
update conductor.settings set fake_clock = true;

-- every combination: two queues, three kinds, priorities, due or later, a key or none
select count(*) from conductor.enqueue_many((
  select jsonb_agg(jsonb_build_object(
           'kind', 'scope-k' || (n % 3), 'queue', 'scope-q' || (n % 2), 'priority', n % 4,
           'run_at', case when n % 5 = 0 then '2030-01-01 01:00:00+00' end,
           'concurrency_key', case when n % 7 = 0 then 'scope-key' || (n % 2) end))
    from generate_series(1, 120) n));
-- a running task of key scope-key1: its other tasks may not start
update conductor.tasks t
   set status = 'running', attempt_id = 1, lease_expires_at = conductor.now(), claimed_by = 'other'
 where t.id = (select min(r.id) from conductor.tasks r where r.concurrency_key = 'scope-key1');

-- the rule, read plainly: the tasks a pick of this scope may take (one per key)
create function conductor_tests.ready(queues text[], kinds text[], not_queues text[], not_kinds text[],
                                      keys text[]) returns setof bigint
  language sql stable as $$
  select distinct on (coalesce(t.concurrency_key, t.id::text)) t.id from conductor.tasks t
   where t.status = 'queued' and t.run_at <= conductor.now() and t.queue like 'scope-q%'
     and (queues is null or t.queue = any (queues)) and (kinds is null or t.kind = any (kinds))
     and (not_queues is null or t.queue <> all (not_queues))
     and (not_kinds is null or t.kind <> all (not_kinds))
     and (t.concurrency_key is null
          or (t.concurrency_key = any (keys)
              and not exists (select from conductor.tasks r
                               where r.concurrency_key = t.concurrency_key and r.status = 'running')))
   order by coalesce(t.concurrency_key, t.id::text), t.priority desc, t.run_at, t.id  -- a key's first in claim order
$$;

-- one pick, rolled back at once (its locks and position with it), as a set of ids (of this
-- file's tasks: with queues NULL, a pick takes every queue's)
create function conductor_tests.picked(worker_id text, queues text[], kinds text[], not_queues text[],
                                       not_kinds text[], keys text[]) returns setof bigint
  language plpgsql as $$
declare
  v_ids bigint[];
begin
  begin
    select p.ids into v_ids
      from conductor._pick(worker_id, queues, kinds, not_queues, not_kinds, keys, 100000, conductor.now(), false) p;
    raise exception using errcode = 'P0001', message = 'roll back', detail = coalesce(v_ids::text, '{}');
  exception when sqlstate 'P0001' then
    get stacked diagnostics v_ids = pg_exception_detail;
  end;
  return query select t.id from conductor.tasks t where t.id = any (v_ids) and t.queue like 'scope-q%';
end
$$;

select set_eq($$select conductor_tests.picked('scope-w', array['scope-q0'], array['scope-k0', 'scope-k1'], null, array['scope-k1'], null)$$,
              $$select conductor_tests.ready(array['scope-q0'], array['scope-k0', 'scope-k1'], null, array['scope-k1'], null)$$,
              'The pick from one queue takes the scope''s ready unkeyed tasks.');
select set_eq($$select conductor_tests.picked('scope-w', array['scope-q0', 'scope-q1'], array['scope-k2'], null, null, null)$$,
              $$select conductor_tests.ready(array['scope-q0', 'scope-q1'], array['scope-k2'], null, null, null)$$,
              'The pick from several queues takes the scope''s ready unkeyed tasks.');
select set_eq($$select conductor_tests.picked('scope-w', null, null, array['scope-q1'], array['scope-k0'], null)$$,
              $$select conductor_tests.ready(null, null, array['scope-q1'], array['scope-k0'], null)$$,
              'The pick from every queue leaves out not_queues and not_kinds.');
select set_eq($$select conductor_tests.picked('scope-w', null, array['scope-k0', 'scope-k1', 'scope-k2'], null, array['scope-k2'],
                                              array['scope-key0', 'scope-key1'])$$,
              $$select conductor_tests.ready(null, array['scope-k0', 'scope-k1', 'scope-k2'], null, array['scope-k2'],
                                             array['scope-key0', 'scope-key1'])$$,
              'The keyed pick takes one task of each key with nothing running, and the unkeyed ones.');
select set_eq($$select conductor_tests.picked('scope-w', array['scope-q1'], null, null, array['scope-k1'], array['scope-key1'])$$,
              $$select conductor_tests.ready(array['scope-q1'], null, null, array['scope-k1'], array['scope-key1'])$$,
              'The keyed pick from one queue takes nothing of a key whose task runs.');

-- a remembered position (stages 1 and 2, then the full scan for the rest) of a worker's scope
-- at priority 2, after the first due task there: the three stages together take the same set
insert into conductor.claim_positions (worker_id, scope, priority, run_at, task_id, until)
select w.worker_id, w.scope, t.priority, t.run_at, t.id, extract(epoch from clock_timestamp()) + 3600
  from (values ('scope-one', 'scope-q0', 'scope-q0'), ('scope-many', 'scope-q0,scope-q1', null)) w(worker_id, scope, queue)
  cross join lateral (select t.priority, t.run_at, t.id from conductor.tasks t
                       where t.status = 'queued' and t.priority = 2 and t.run_at <= conductor.now()
                         and (w.queue is null or t.queue = w.queue)
                       order by t.run_at, t.id limit 1) t;
select set_eq($$select conductor_tests.picked('scope-one', array['scope-q0'], null, null, array['scope-k2'], null)$$,
              $$select conductor_tests.ready(array['scope-q0'], null, null, array['scope-k2'], null)$$,
              'From a remembered position, the stages of one queue''s pick take the scope''s ready tasks.');
select set_eq($$select conductor_tests.picked('scope-many', array['scope-q0', 'scope-q1'], null, null, array['scope-k2'], null)$$,
              $$select conductor_tests.ready(array['scope-q0', 'scope-q1'], null, null, array['scope-k2'], null)$$,
              'From a remembered position, the stages of several queues'' pick take the scope''s ready tasks.');

select * from finish();
rollback;
