-- exclusive raises QC106 for a NULL or empty name, and takes no lock.
begin;
select plan(3);
\ir ../helpers.psql

select throws_ok($$select conductor.exclusive(null)$$, 'QC106', 'an exclusive lock needs a name',
  'A NULL name is refused with QC106.');
select throws_ok($$select conductor.exclusive('')$$, 'QC106', 'an exclusive lock needs a name',
  'An empty name is refused with QC106.');
select is((select count(*) from pg_locks l where l.pid = pg_backend_pid() and l.locktype = 'advisory'), 0::bigint,
  'No advisory lock is held.');

select * from finish();
rollback;
