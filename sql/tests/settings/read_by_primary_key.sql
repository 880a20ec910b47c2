-- The hot path reads conductor.settings through its primary key. claim and _complete run
-- with enable_seqscan = off; a settings read planned as a (disabled) sequential scan there
-- costs 1e10, which crosses jit_above_cost and JIT-compiled every call (~30 ms each).
begin;
select plan(3);
\ir ../helpers.psql

set local enable_seqscan = off;
set local conductor.fake_now = '2030-01-01 00:00:00+00';  -- now() reads the row only for a fake time
select conductor.now();
select is(conductor_tests.seq_scans('settings'), 0::bigint, 'now() reads the settings row by its key.');
select conductor._max_payload_bytes();
select is(conductor_tests.seq_scans('settings'), 0::bigint, '_max_payload_bytes() reads the settings row by its key.');
select conductor._claim_slow_scan();
select is(conductor_tests.seq_scans('settings'), 0::bigint, '_claim_slow_scan() reads the settings row by its key.');
reset enable_seqscan;

select * from finish();
rollback;
