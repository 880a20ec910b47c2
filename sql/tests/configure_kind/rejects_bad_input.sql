-- configure_kind names what is wrong and stores nothing.
begin;
select plan(5);

select throws_ok($$select conductor.configure_kind('')$$, 'QC101', NULL,
                 'An empty kind is refused.');
select throws_ok($$select conductor.configure_kind('never-configured', max_attempts => 0)$$, 'QC106', NULL,
                 'max_attempts below 1 is refused.');
select throws_ok($$select conductor.configure_kind('never-configured', max_recoveries => -1)$$, 'QC106', NULL,
                 'Negative max_recoveries is refused.');
select throws_ok($$select conductor.configure_kind('never-configured', backoff_factor => 0.5)$$, 'QC106', NULL,
                 'A backoff factor below 1 is refused.');
select is((select count(*) from conductor.kinds where kind = 'never-configured')::int, 0,
          'Nothing was stored by the refused calls.');

select * from finish();
rollback;
