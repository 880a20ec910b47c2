-- set_rate_limit takes exactly one of queue and kind (QC106), names enqueue would accept
-- (QC104 queue, QC101 kind), per_second in (0, 1000000] and burst in [1, 1000000], finite
-- (QC106), and no burst without per_second; a client role may not call it (42501).
-- Nothing is written by a refused call.
begin;
select plan(15);
\ir ../helpers.psql

select throws_ok($$select conductor.set_rate_limit(per_second => 1)$$, 'QC106',
  'set_rate_limit needs exactly one of queue and kind, got neither', 'Neither queue nor kind: QC106.');
select throws_ok($$select conductor.set_rate_limit('q', 'k', 1)$$, 'QC106',
  'set_rate_limit needs exactly one of queue and kind, got both', 'Both: QC106.');
select throws_ok($$select conductor.set_rate_limit(queue => 'bad queue', per_second => 1)$$, 'QC104', NULL,
  'An invalid queue name: QC104.');
select throws_ok($$select conductor.set_rate_limit(queue => '', per_second => 1)$$, 'QC104', NULL,
  'An empty queue name: QC104.');
select throws_ok($$select conductor.set_rate_limit(kind => ' padded ', per_second => 1)$$, 'QC101', NULL,
  'An invalid kind name: QC101.');
select throws_ok($$select conductor.set_rate_limit(kind => '', per_second => 1)$$, 'QC101', NULL,
  'An empty kind name: QC101.');
select throws_ok($$select conductor.set_rate_limit(queue => 'q', per_second => 0)$$, 'QC106',
  'invalid per_second 0: task starts per second, more than 0 and at most 1000000', 'per_second 0: QC106.');
select throws_ok($$select conductor.set_rate_limit(queue => 'q', per_second => -1)$$, 'QC106', NULL,
  'A negative per_second: QC106.');
select throws_ok($$select conductor.set_rate_limit(queue => 'q', per_second => 'NaN')$$, 'QC106', NULL,
  'per_second NaN: QC106.');
select throws_ok($$select conductor.set_rate_limit(queue => 'q', per_second => 'infinity')$$, 'QC106', NULL,
  'per_second infinity: QC106.');
select throws_ok($$select conductor.set_rate_limit(queue => 'q', per_second => 1000001)$$, 'QC106', NULL,
  'per_second over 1000000: QC106.');
select throws_ok($$select conductor.set_rate_limit(queue => 'q', per_second => 1, burst => 0.5)$$, 'QC106', NULL,
  'A burst under 1: QC106.');
select throws_ok($$select conductor.set_rate_limit(queue => 'q', per_second => 1, burst => 'NaN')$$, 'QC106', NULL,
  'burst NaN: QC106.');
select throws_ok($$select conductor.set_rate_limit(queue => 'q', burst => 5)$$, 'QC106', NULL,
  'A burst without per_second: QC106.');

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select throws_ok($$select conductor.set_rate_limit(queue => 'q', per_second => 1)$$, '42501', NULL,
  'A conductor_client role cannot set a rate limit.');
reset role;

select * from finish();
rollback;
