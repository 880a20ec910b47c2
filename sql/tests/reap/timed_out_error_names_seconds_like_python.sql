-- The time limit's error reads the same wherever it is written: 'timed out after N s',
-- N printed as Python's f"{n:g}" (the worker's own message), by conductor._timed_out_error.
begin;
select plan(1);

select results_eq(
  $$select conductor._timed_out_error(v) from unnest(array[
      interval '2 seconds', '1.5 seconds', '0.25 seconds', '5 minutes', '1 day', '123456.7 seconds',
      '999999.5 seconds', '1000000 seconds', '30 days', '0.0001 seconds', '0.00005 seconds',
      '0.000001 seconds', '12.345678 seconds']) v$$,
  $$values ('timed out after 2 s'), ('timed out after 1.5 s'), ('timed out after 0.25 s'),
           ('timed out after 300 s'), ('timed out after 86400 s'), ('timed out after 123457 s'),
           ('timed out after 1e+06 s'), ('timed out after 1e+06 s'), ('timed out after 2.592e+06 s'),
           ('timed out after 0.0001 s'), ('timed out after 5e-05 s'), ('timed out after 1e-06 s'),
           ('timed out after 12.3457 s')$$,
  'Six significant digits, no trailing zeros, an exponent below 1e-4 and from 1e6 on, as %g prints.');

select * from finish();
rollback;
