-- A kind's policy is the login's that declared it (issue 25). As a second conductor_worker
-- login, configure_kind may not re-route another application's kind (queue => 'blackhole'),
-- break it (timeout => '1 microsecond') or shorten its retention: QC208 and nothing changes.
-- Re-declaring it exactly as stored succeeds for anyone and changes nothing (a worker
-- restarting); its owner may change it; an admin may, and the kind is the admin's then, so
-- the code's next declaration that differs is refused (QC208) and the admin's policy stays.
begin;
select plan(16);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_billing;
grant conductor_worker to t_billing;
create role t_attacker;
grant conductor_worker to t_attacker;
create role t_admin;
grant conductor_admin to t_admin;

set local role t_billing;
select conductor.configure_kind('invoice', queue => 'billing', max_attempts => 3, timeout => '5 minutes',
                                retain_succeeded => '7 days', retain_failed => '30 days');
reset role;
select is((select owner from conductor.kinds where kind = 'invoice'), 't_billing',
  'The kind records the login that declared it.');
select to_jsonb(k) as stored from conductor.kinds k where kind = 'invoice' \gset

set local role t_attacker;
select throws_ok($$select conductor.configure_kind('invoice', queue => 'blackhole', max_attempts => 3,
                     timeout => '5 minutes', retain_succeeded => '7 days', retain_failed => '30 days')$$,
  'QC208', 'kind ''invoice'' was declared by login ''t_billing'': only that login or an admin may change it',
  'Another worker login cannot re-route the kind to another queue (QC208, naming the owner).');
select throws_ok($$select conductor.configure_kind('invoice', queue => 'billing', max_attempts => 3,
                     timeout => '1 microsecond', retain_succeeded => '7 days', retain_failed => '30 days')$$,
  'QC208', NULL, 'Nor break it with a timeout of one microsecond.');
select throws_ok($$select conductor.configure_kind('invoice', retain_succeeded => '0 s', retain_failed => '0 s')$$,
  'QC208', NULL, 'Nor shorten its retention to nothing.');
select throws_ok($$select conductor.configure_kind('invoice')$$, 'QC208', NULL,
  'Nor wipe its policy back to the engine defaults.');
reset role;
select is((select to_jsonb(k) from conductor.kinds k where kind = 'invoice'), :'stored'::jsonb,
  'The refused calls left the row exactly as it was.');

select xmin::text as xmin_before from conductor.kinds where kind = 'invoice' \gset
set local role t_attacker;
select lives_ok($$select conductor.configure_kind('invoice', queue => 'billing', max_attempts => 3,
                    timeout => '5 minutes', retain_succeeded => '7 days', retain_failed => '30 days')$$,
  'Re-declaring it exactly as stored succeeds for another login (no change).');
reset role;
select is((select xmin::text || ' ' || owner from conductor.kinds where kind = 'invoice'),
  :'xmin_before' || ' t_billing', 'And writes nothing: same row version, same owner.');

-- a task enqueued by anyone still gets the owner's policy
select conductor.enqueue('invoice') as task \gset
select is((select (queue, timeout)::text from conductor.tasks where id = :task),
  ('billing', interval '5 minutes')::text, 'Tasks of the kind still get the owner''s queue and timeout.');

set local conductor.fake_now = '2030-01-01 00:01:00+00';
set local role t_billing;
select lives_ok($$select conductor.configure_kind('invoice', queue => 'billing', max_attempts => 5)$$,
  'The owner changes its own kind.');
reset role;
select is((select (max_attempts, timeout, owner, updated_at)::text from conductor.kinds where kind = 'invoice'),
  (5, null::interval, 't_billing', timestamptz '2030-01-01 00:01:00+00')::text,
  'The change is stored, still the owner''s.');

set local role t_admin;
select lives_ok($$select conductor.configure_kind('invoice', queue => 'billing-slow', max_attempts => 5)$$,
  'An admin changes any login''s kind.');
reset role;
select is((select (queue, owner)::text from conductor.kinds where kind = 'invoice'), ('billing-slow', 't_admin')::text,
  'The admin''s change is stored and the kind is the admin''s now.');
set local role t_billing;
select throws_ok($$select conductor.configure_kind('invoice', queue => 'billing', max_attempts => 5)$$, 'QC208',
  'kind ''invoice'' was declared by login ''t_admin'': only that login or an admin may change it',
  'The code''s next declaration that differs is refused: the operator''s policy stays.');
select lives_ok($$select conductor.configure_kind('invoice', queue => 'billing-slow', max_attempts => 5)$$,
  'One that matches what the admin stored succeeds.');
reset role;
select is((select (queue, owner)::text from conductor.kinds where kind = 'invoice'), ('billing-slow', 't_admin')::text,
  'The admin''s policy and ownership are unchanged.');

select * from finish();
rollback;
