-- enqueue_many takes the dedupe options as keys of each task (dedupe_states a JSON array):
-- tasks with them go through the same rules, in input order, next to tasks without.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select array_agg(id order by ord) as ids from conductor.enqueue_many($$[
  {"kind": "k", "queue": "um-q", "payload": {"v": 1}, "dedupe_key": "a", "debounce": "30 seconds", "debounce_max": "5 minutes"},
  {"kind": "k", "queue": "um-q", "payload": {"v": 0}},
  {"kind": "k", "queue": "um-q", "payload": {"v": 2}, "dedupe_key": "a", "debounce": "30 seconds"},
  {"kind": "k", "queue": "um-q", "payload": {"v": 3}, "dedupe_key": "b",
   "dedupe_states": ["queued", "running", "waiting", "succeeded"], "dedupe_window": "1 day"}
]$$) with ordinality as e(id, ord) \gset
select is((:'ids'::bigint[])[1], (:'ids'::bigint[])[3], 'Two debounced tasks of one key in a batch are one task');
select is((select (payload, run_at, debounce_until) from conductor.tasks where id = (:'ids'::bigint[])[1]),
  ('{"v": 2}'::jsonb, '2030-01-01 00:00:30+00'::timestamptz, '2030-01-01 00:05:00+00'::timestamptz),
  'with the last payload; the first enqueue''s maximum stays.');
select is((select (dedupe_states::text[], dedupe_until) from conductor.tasks where id = (:'ids'::bigint[])[4]),
  (array['queued', 'running', 'waiting', 'succeeded'], '2030-01-02 00:00:00+00'::timestamptz),
  'States and window are stored as given.');
select is((select count(*) from conductor.tasks where queue = 'um-q'), 3::bigint, 'Three tasks for four specs.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k", "dedupe_key": "c", "dedupe_states": ["queued"]}]')$$,
  'QC121', null, 'A batch task''s dedupe_states without the unfinished statuses is QC121.');

select * from finish();
rollback;
