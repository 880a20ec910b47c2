-- enqueue_many resolves each task as enqueue does: a key left out is the task's kind's value
-- (configure_kind), else the engine's default; a key given wins. One batch mixes kinds with
-- and without a configuration. The "timeout" key is stored on the task and checked by the
-- task rules (QC106, the detail naming the task).
begin;
select plan(6);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.configure_kind('km.conf', queue => 'km-q', priority => 5, concurrency_key => 'km-key',
                                timeout => '30 seconds', max_attempts => 3, max_recoveries => 1);

create temp table batch as
  select * from conductor.enqueue_many(jsonb_build_array(
    jsonb_build_object('kind', 'km.conf'),
    jsonb_build_object('kind', 'km.plain'),
    jsonb_build_object('kind', 'km.conf', 'queue', 'km-own', 'priority', 0, 'timeout', '2 seconds',
                       'max_attempts', 1),
    jsonb_build_object('kind', 'km.plain', 'timeout', 1.5, 'concurrency_key', 'km-own-key'),
    jsonb_build_object('kind', 'km.conf', 'queue', null)
  )) with ordinality as b(id, n);

create temp table got as
  select b.n, (t.queue, t.priority, t.concurrency_key, t.timeout, t.max_attempts, t.max_recoveries)::text as v
    from batch b join conductor.tasks t on t.id = b.id;

select is((select v from got where n = 1), '(km-q,5,km-key,00:00:30,3,1)',
  'A task of a configured kind giving nothing takes every default of its kind.');
select is((select v from got where n = 2), '(default,0,,,1,3)',
  'A task of a kind without a row in the same batch keeps the engine defaults.');
select is((select v from got where n = 3), '(km-own,0,km-key,00:00:02,1,1)',
  'The keys a task gives win; the others are still its kind''s.');
select is((select v from got where n = 4), '(default,0,km-own-key,00:00:01.5,1,3)',
  'A timeout given as a number is seconds, stored on the task.');
select is((select v from got where n = 5), '(km-q,5,km-key,00:00:30,3,1)',
  'A key holding JSON null is not given: the kind''s.');

select throws_ok(
  $$select conductor.enqueue_many('[{"kind": "km.plain"}, {"kind": "km.plain", "timeout": "0 s"}]')$$, 'QC106',
  'invalid timeout 00:00:00 for kind ''km.plain'': it must be more than 0 and at most 30 days',
  'A timeout of 0 in a batch is refused with QC106, naming it and the kind.');

select * from finish();
rollback;
