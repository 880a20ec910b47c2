-- A worker registration is its login's (issue 25). v0.2.0: as a second conductor_worker
-- login, register_worker('billing-w', kinds => '{nothing}') replaced the billing worker's
-- row, and reap()'s unknown-kind sweep then dead-lettered the billing application's queued
-- tasks; deregister_worker('billing-w') succeeded from any worker login. Now both raise
-- QC208 naming the owner and change nothing, so the sweep still sees billing-w serve its
-- kind; the owner registers again and deregisters; an admin may do either.
begin;
select plan(13);
\ir ../helpers.psql
set local conductor.fake_now = '2031-05-01 00:00:00+00';
update conductor.settings set unknown_kind_after = interval '5 minutes';
delete from conductor.workers;
update conductor.maintenance set unknown_kinds_swept_at = null;  -- whatever a committed test left

create role t_billing;
grant conductor_worker to t_billing;
create role t_attacker;
grant conductor_worker to t_attacker;
create role t_admin;
grant conductor_admin to t_admin;

set local role t_billing;
select conductor.register_worker('billing-w', host => 'b1', queues => '{billing}', kinds => '{invoice}') as r \gset
reset role;
select is((select owner from conductor.workers where id = 'billing-w'), 't_billing',
  'The registration records the login that registered.');
select to_jsonb(w) as stored from conductor.workers w where id = 'billing-w' \gset
select conductor.enqueue('invoice', '{}', 'billing') as invoice \gset

set local role t_attacker;
select throws_ok($$select conductor.register_worker('billing-w', host => 'b1', queues => '{billing}', kinds => '{invoice}')$$,
  'QC208', 'worker ''billing-w'' was declared by login ''t_billing'': only that login or an admin may change it',
  'Another worker login cannot register the worker again, not even with the same fields (QC208, naming the owner).');
select throws_ok($$select conductor.register_worker('billing-w', kinds => '{nothing}')$$, 'QC208', NULL,
  'Nor replace it with one that serves nothing.');
reset role;
select is((select to_jsonb(w) from conductor.workers w where id = 'billing-w'), :'stored'::jsonb,
  'The refused registrations left the row exactly as it was.');

-- long after, billing-w still alive (its heartbeats): the sweep runs and kills nothing of it
set local conductor.fake_now = '2031-05-01 01:00:00+00';
set local role t_billing;
select count(*) from conductor.heartbeat('billing-w', '{}') \gset
reset role;
select conductor.reap() as reaped \gset
select is((select status::text from conductor.tasks where id = :invoice), 'queued',
  'The unknown-kind sweep leaves the billing application''s task queued: its worker still serves the kind.');

set local role t_attacker;
select throws_ok($$select conductor.deregister_worker('billing-w')$$, 'QC208', NULL, 'Nor can it deregister the worker.');
reset role;
select is((select kinds from conductor.workers w where id = 'billing-w'), '{invoice}'::text[],
  'The row is still there.');
select is((select count(*) from conductor.served_kinds where kind = 'invoice'), 0::bigint,
  'The refused deregistration recorded nothing.');

set local role t_billing;
select lives_ok($$select conductor.register_worker('billing-w', host => 'b2', queues => '{billing}', kinds => '{invoice}')$$,
  'The owner registers its worker again.');
select is(conductor.deregister_worker('billing-w'), true, 'And deregisters it.');
reset role;

-- an admin may replace and remove anyone's registration
set local role t_billing;
select conductor.register_worker('billing-w2', kinds => '{invoice}') as r \gset
reset role;
set local role t_admin;
select lives_ok($$select conductor.register_worker('billing-w2', kinds => '{invoice,receipt}')$$,
  'An admin replaces a worker login''s registration...');
select is(conductor.deregister_worker('billing-w2'), true, '...and deregisters it.');
reset role;
set local role t_attacker;
select is(conductor.deregister_worker('nobody-w'), false, 'Deregistering a worker that is not registered answers false.');
reset role;

select * from finish();
rollback;
