-- conductor.claim_positions is unlogged (a hint: empty after a crash or on a promoted standby,
-- no WAL for its rows), but the sequence of its seq column is logged: an unlogged sequence
-- cannot be read on a promoted standby ("bad magic number in sequence"), and every claim that
-- remembers a position would fail after a failover (python/tests/test_failover.py proves it end
-- to end). The sequence belongs to the column (dropped with the table), and no role draws from it.
begin;
select plan(4);

select is((select relpersistence::text from pg_class where oid = 'conductor.claim_positions'::regclass), 'u',
  'conductor.claim_positions is unlogged.');
select is((select relpersistence::text from pg_class where oid = 'conductor.claim_positions_seq'::regclass), 'p',
  'Its sequence is logged.');
select is((select pg_get_serial_sequence('conductor.claim_positions', 'seq')), 'conductor.claim_positions_seq',
  'The sequence is owned by the column seq.');
select is_empty($$select r.rolname from pg_roles r
                   where r.rolname in ('conductor_client', 'conductor_worker', 'conductor_admin')
                     and (has_sequence_privilege(r.rolname, 'conductor.claim_positions_seq', 'USAGE')
                          or has_sequence_privilege(r.rolname, 'conductor.claim_positions_seq', 'UPDATE'))$$,
  'No role may draw from it.');

select * from finish();
rollback;
