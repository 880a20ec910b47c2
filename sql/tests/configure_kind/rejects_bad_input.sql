-- configure_kind checks a kind and its policy by the rules enqueue applies
-- (conductor._spec_problem), with the same SQLSTATEs, names what is wrong and stores nothing.
begin;
select plan(12);

select throws_ok($$select conductor.configure_kind('')$$, 'QC101', NULL,
                 'An empty kind is refused.');
select throws_ok($$select conductor.configure_kind(' padded')$$, 'QC101', NULL,
                 'A kind with a leading space is refused with QC101, as enqueue refuses it.');
select throws_ok(format('select conductor.configure_kind(%L)', repeat('k', 201)), 'QC101', NULL,
                 'A kind of 201 characters is refused with QC101, as enqueue refuses it.');
select throws_ok($$select conductor.configure_kind(NULL)$$, 'QC101', NULL,
                 'An SQL NULL kind is refused with QC101.');
select throws_ok($$select conductor.configure_kind('never-configured', max_attempts => 0)$$, 'QC106', NULL,
                 'max_attempts below 1 is refused.');
select throws_ok($$select conductor.configure_kind('never-configured', max_recoveries => -1)$$, 'QC106', NULL,
                 'Negative max_recoveries is refused.');
select throws_ok($$select conductor.configure_kind('never-configured', backoff_factor => 0.5)$$, 'QC106', NULL,
                 'A backoff factor below 1 is refused.');
select throws_ok($$select conductor.configure_kind('never-configured', backoff_factor => 'NaN')$$, 'QC106',
                 'invalid retry policy for kind ''never-configured'': backoff_factor NaN, it must be a number from 1 to 10',
                 'A backoff factor NaN is refused, the message naming it.');
select throws_ok($$select conductor.configure_kind('never-configured', backoff_base => '1000000 years')$$, 'QC106', NULL,
                 'A backoff_base of a million years is refused.');
select throws_ok($$select conductor.configure_kind('never-configured', backoff_max => '1000000 years')$$, 'QC106', NULL,
                 'A backoff_max of a million years is refused.');
select throws_ok($$select conductor.configure_kind('never-configured', backoff_base => '1 hour', backoff_max => '1 minute')$$,
                 'QC106', NULL, 'A backoff_base over backoff_max is refused.');
select is((select count(*) from conductor.kinds where kind in ('never-configured', ' padded'))::int, 0,
          'Nothing was stored by the refused calls.');

select * from finish();
rollback;
