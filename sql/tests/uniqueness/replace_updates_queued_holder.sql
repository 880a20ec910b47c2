-- on_duplicate: replace gives a queued holder the new payload and run_at, preserve_run_at the
-- payload only; ignore (and NULL) changes nothing. A holder that started keeps running and
-- gives its key to a new task with the new payload; a finished holder is never replaced.
begin;
select plan(11);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('mail', '{"v": 1}', 'ur-q', run_at => '2030-01-01 01:00:00+00', dedupe_key => 'm:1') as holder \gset
select is(conductor.enqueue('mail', '{"v": 2}', 'ur-q', dedupe_key => 'm:1', on_duplicate => 'ignore'),
  :holder::bigint, 'ignore returns the holder''s id');
select is((select payload from conductor.tasks where id = :holder), '{"v": 1}'::jsonb, 'and changes nothing.');

select is(conductor.enqueue('mail', '{"v": 3}', 'ur-q', run_at => '2030-01-01 02:00:00+00', dedupe_key => 'm:1',
                            on_duplicate => 'preserve_run_at'),
  :holder::bigint, 'preserve_run_at returns the holder''s id');
select is((select (payload, run_at) from conductor.tasks where id = :holder),
  ('{"v": 3}'::jsonb, '2030-01-01 01:00:00+00'::timestamptz), 'and gives it the payload, keeping its run_at.');

select is(conductor.enqueue('mail', '{"v": 4}', 'ur-q', run_at => '2030-01-01 00:30:00+00', dedupe_key => 'm:1',
                            on_duplicate => 'replace'),
  :holder::bigint, 'replace returns the holder''s id');
select is((select (payload, run_at) from conductor.tasks where id = :holder),
  ('{"v": 4}'::jsonb, '2030-01-01 00:30:00+00'::timestamptz), 'and gives it the payload and run_at.');
select is((select count(*) from conductor.tasks where queue = 'ur-q'), 1::bigint, 'Still one task.');

-- the holder starts: a replace makes a new task, and the running one gives its key up
set local conductor.fake_now = '2030-01-01 00:30:00+00';
select conductor_tests.claim_one('ur-q') as a1 \gset
select conductor.enqueue('mail', '{"v": 5}', 'ur-q', dedupe_key => 'm:1', on_duplicate => 'replace') as second \gset
select isnt(:second::bigint, :holder::bigint, 'A replace while the holder runs writes a new task');
select is((select (t.status::text, t.dedupe_key, n.payload, n.dedupe_key)
             from conductor.tasks t, conductor.tasks n where t.id = :holder and n.id = :second),
  ('running'::text, null::text, '{"v": 5}'::jsonb, 'm:1'::text),
  'which holds the key with the new payload; the running one runs on without the key.');
select is(conductor.complete(:a1, '{}') is not null, true, 'The old holder still completes.');

-- a finished holder (states with succeeded) is never replaced
select conductor.enqueue('mail', '{"v": 1}', 'ur-q2', dedupe_key => 'm:2',
                         dedupe_states => array['queued', 'running', 'waiting', 'succeeded']) as h2 \gset
select conductor_tests.claim_one('ur-q2') as a2 \gset
select conductor.complete(:a2, '{}') as done \gset
select is(conductor.enqueue('mail', '{"v": 9}', 'ur-q2', dedupe_key => 'm:2', on_duplicate => 'replace',
                            dedupe_states => array['queued', 'running', 'waiting', 'succeeded']),
  :h2::bigint, 'A succeeded holder of the key answers a replace unchanged.');

select * from finish();
rollback;
