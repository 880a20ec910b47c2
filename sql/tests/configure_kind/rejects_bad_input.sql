-- configure_kind, called as conductor_worker (to whom it is granted), checks a kind and its
-- values by the rules enqueue applies (conductor._spec_problem), with the same SQLSTATEs:
-- QC101 kind, QC104 queue, QC106 the rest; it names what is wrong and stores nothing.
begin;
select plan(20);

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

select throws_ok($$select conductor.configure_kind('')$$, 'QC101', NULL,
                 'An empty kind is refused.');
select throws_ok($$select conductor.configure_kind(' padded')$$, 'QC101', NULL,
                 'A kind with a leading space is refused with QC101, as enqueue refuses it.');
select throws_ok(format('select conductor.configure_kind(%L)', repeat('k', 201)), 'QC101', NULL,
                 'A kind of 201 characters is refused with QC101, as enqueue refuses it.');
select throws_ok($$select conductor.configure_kind(NULL)$$, 'QC101', NULL,
                 'An SQL NULL kind is refused with QC101.');
select throws_ok($$select conductor.configure_kind('never-configured', queue => '')$$, 'QC104',
                 'invalid queue '''': a queue name is 1-100 letters, digits and _ . : / -, starting with a letter or digit',
                 'An empty queue is refused with QC104, the message naming it.');
select throws_ok($$select conductor.configure_kind('never-configured', queue => 'my jobs')$$, 'QC104', NULL,
                 'A queue name with a space is refused with QC104.');
select throws_ok(format('select conductor.configure_kind(%L, queue => %L)', 'never-configured', repeat('q', 101)),
                 'QC104', NULL, 'A queue name of 101 characters is refused with QC104.');
select throws_ok($$select conductor.configure_kind('never-configured', timeout => '0 seconds')$$, 'QC106',
                 'invalid timeout 00:00:00 for kind ''never-configured'': it must be more than 0 and at most 30 days',
                 'A timeout of 0 is refused with QC106, the message naming the value and the kind.');
select throws_ok($$select conductor.configure_kind('never-configured', timeout => '-1 second')$$, 'QC106', NULL,
                 'A negative timeout is refused.');
select throws_ok($$select conductor.configure_kind('never-configured', timeout => '30 days 1 second')$$, 'QC106',
                 'invalid timeout 30 days 00:00:01 for kind ''never-configured'': it must be more than 0 and at most 30 days',
                 'A timeout over 30 days is refused.');
select throws_ok($$select conductor.configure_kind('never-configured', concurrency_key => repeat('c', 1001))$$,
                 'QC106', NULL, 'A concurrency_key over 1000 bytes is refused.');
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
select lives_ok($$select conductor.configure_kind('edge-configured', timeout => '30 days', queue => repeat('q', 100))$$,
                'A timeout of exactly 30 days and a queue name of 100 characters are accepted.');
select is((select count(*) from conductor.kinds where kind in ('never-configured', ' padded'))::int, 0,
          'Nothing was stored by the refused calls.');

reset role;
select * from finish();
rollback;
