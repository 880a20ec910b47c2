-- save_log, called as conductor_worker, stores an attempt's log lines, keeps the longest
-- prefix whose text form fits settings.max_log_bytes and counts the rest (and the caller's
-- dropped) as dropped; a second call appends, still bounded; 0 keeps none; it works on a
-- finished attempt; it refuses what is not an array (QC106) and an unknown attempt (QC203).
begin;
select plan(10);
\ir ../helpers.psql

create role t_worker;
grant conductor_worker to t_worker;
create role t_client;
grant conductor_client to t_client;
-- each line below is 19 bytes of text ({"message": "aaaa"}): n lines take 2 + 19n + 2(n - 1) = 21n bytes
update conductor.settings set max_log_bytes = 70;

select conductor.enqueue('k', '{}', 'sl') as task \gset
set local role t_worker;
-- into the attempts of its own worker (only_the_callers_worker.sql)
select conductor.register_worker('w1') as r \gset
select c.attempt_id as att from conductor.claim('w1', array['sl'], 1) c \gset
select lives_ok(format($$select conductor.save_log(%s, '[{"message": "aaaa"}, {"message": "bbbb"}]')$$, :att),
  'A worker saves two lines of its attempt.');
select is((select (lines::text, dropped)::text from conductor.attempt_logs where attempt_id = :att),
  ('[{"message": "aaaa"}, {"message": "bbbb"}]', 0)::text, 'Both are stored, nothing dropped.');
select conductor.save_log(:att, '[{"message": "cccc"}, {"message": "dddd"}, {"message": "eeee"}]', dropped => 5);
select is((select (lines::text, dropped)::text from conductor.attempt_logs where attempt_id = :att),
  ('[{"message": "aaaa"}, {"message": "bbbb"}, {"message": "cccc"}]', 7)::text,
  'A second call appends: three lines fit 70 bytes (63), four would not (84), two are dropped, plus the 5 the caller dropped.');
reset role;
select is(octet_length((select lines::text from conductor.attempt_logs where attempt_id = :att)), 63,
  'The stored text is the size counted.');

set local role t_worker;
select conductor.complete(:att) as done \gset
select conductor.save_log(:att, '[{"message": "ffff"}]');
select is((select dropped from conductor.attempt_logs where attempt_id = :att), 8,
  'After the attempt finished a call is still accepted: a line that no longer fits is counted.');
select throws_ok(format($$select conductor.save_log(%s, '{"message": "x"}')$$, :att), 'QC106',
  'invalid lines: a JSON array of log records, got object', 'An object instead of an array is refused with QC106.');
select throws_ok(format($$select conductor.save_log(%s, NULL)$$, :att), 'QC106', NULL, 'SQL NULL lines are refused.');
select throws_ok(format($$select conductor.save_log(%s, '[]', dropped => -1)$$, :att), 'QC106', NULL,
  'A negative dropped is refused.');
select throws_ok($$select conductor.save_log(-1, '[]')$$, 'QC203', 'attempt -1 does not exist',
  'An unknown attempt is refused with QC203.');
reset role;

update conductor.settings set max_log_bytes = 0;
select conductor.enqueue('k', '{}', 'sl') as task2 \gset
select conductor_tests.claim_one('sl') as att2 \gset
select conductor.save_log(:att2, '[{"message": "aaaa"}]');
select is((select (lines::text, dropped)::text from conductor.attempt_logs where attempt_id = :att2),
  ('[]', 1)::text, 'With max_log_bytes 0 no line is kept; each is counted.');

select * from finish();
rollback;
