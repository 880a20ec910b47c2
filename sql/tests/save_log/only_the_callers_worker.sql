-- save_log writes only into an attempt of the caller's own worker (issue 25). v0.2.0 took
-- lines from any conductor_worker login into any attempt, other workers' finished ones
-- included. Now an attempt is writable by the login that registered its worker
-- (conductor.workers.owner) and by an admin; another worker login is refused with QC208,
-- whether the attempt runs or finished, and so is anyone but an admin for an attempt whose
-- worker is not registered. Nothing is stored by a refused call.
begin;
select plan(11);
\ir ../helpers.psql
set local conductor.fake_now = '2031-06-01 00:00:00+00';

create role t_billing;
grant conductor_worker to t_billing;
create role t_attacker;
grant conductor_worker to t_attacker;
create role t_admin;
grant conductor_admin to t_admin;

select conductor.enqueue('invoice', '{}', 'billing') as task \gset
select conductor.enqueue('invoice', '{}', 'billing') as task2 \gset
set local role t_billing;
select conductor.register_worker('billing-w', queues => '{billing}') as r \gset
select c.attempt_id as att from conductor.claim('billing-w', array['billing'], 1) c \gset
select lives_ok(format($$select conductor.save_log(%s, '[{"message": "billed"}]')$$, :att),
  'A worker saves the lines of its own attempt.');
reset role;

set local role t_attacker;
select conductor.register_worker('att-w') as r \gset
select throws_ok(format($$select conductor.save_log(%s, '[{"message": "forged"}]')$$, :att), 'QC208',
  'worker ''billing-w'' was declared by login ''t_billing'': only that login or an admin may change it',
  'Another worker login cannot write into it while it runs (QC208, naming the worker''s login).');
reset role;
select is((select lines::text from conductor.attempt_logs where attempt_id = :att), '[{"message": "billed"}]',
  'The refused call stored nothing.');

set local role t_billing;
select conductor.complete(:att) as done \gset
reset role;
set local role t_attacker;
select throws_ok(format($$select conductor.save_log(%s, '[{"message": "forged"}]', dropped => 5)$$, :att), 'QC208', NULL,
  'Nor once it finished.');
reset role;
select is((select (lines::text, dropped)::text from conductor.attempt_logs where attempt_id = :att),
  ('[{"message": "billed"}]', 0)::text, 'Not a line, not a dropped count.');

set local role t_billing;
select lives_ok(format($$select conductor.save_log(%s, '[{"message": "late"}]')$$, :att),
  'Its own worker still adds its last lines after the end.');
reset role;

-- an attempt of a worker that never registered is nobody's: only an admin writes into it
select conductor_tests.claim_one('billing', 'ghost-w') as ghost \gset
set local role t_attacker;
select throws_ok(format($$select conductor.save_log(%s, '[{"message": "x"}]')$$, :ghost), 'QC208',
  format('attempt %s is of worker ''ghost-w'', which is not registered: only a login''s own registered workers save their attempts'' log lines', :ghost),
  'An attempt of an unregistered worker is refused (QC208).');
reset role;
set local role t_billing;
select throws_ok(format($$select conductor.save_log(%s, '[{"message": "x"}]')$$, :ghost), 'QC208', NULL,
  'To every worker login.');
reset role;
select is((select count(*) from conductor.attempt_logs where attempt_id = :ghost), 0::bigint, 'Nothing was stored.');

set local role t_admin;
select lives_ok(format($$select conductor.save_log(%s, '[{"message": "ops"}]')$$, :ghost),
  'An admin writes into any attempt.');
select lives_ok(format($$select conductor.save_log(%s, '[{"message": "ops"}]')$$, :att),
  'Another worker''s too.');
reset role;

select * from finish();
rollback;
