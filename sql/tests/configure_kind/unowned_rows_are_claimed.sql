-- A kind stored before v0.3.0 records no login (owner NULL, as the upgrade leaves it): the
-- first login that declares it again claims it, whether its declaration changes the row or
-- repeats it exactly (the code that declared it does so at its next start); from then on
-- another login may not change it (issue 25).
begin;
select plan(4);
\ir ../helpers.psql

create role t_billing;
grant conductor_worker to t_billing;
create role t_attacker;
grant conductor_worker to t_attacker;

-- as the upgrade leaves v0.2.0's rows
insert into conductor.kinds (kind, queue, max_attempts, updated_at) values ('old.same', 'billing', 2, now()),
                                                                     ('old.changed', 'billing', 2, now());

set local role t_billing;
select lives_ok($$select conductor.configure_kind('old.same', queue => 'billing', max_attempts => 2)$$,
  'Re-declaring an unowned kind exactly as stored succeeds.');
select lives_ok($$select conductor.configure_kind('old.changed', queue => 'billing', max_attempts => 4)$$,
  'Changing an unowned kind succeeds.');
reset role;
select results_eq($$select kind, owner, max_attempts from conductor.kinds where kind like 'old.%' order by kind$$,
  $$values ('old.changed'::text, 't_billing'::text, 4), ('old.same', 't_billing', 2)$$,
  'Both are claimed by the login that declared them again.');
set local role t_attacker;
select throws_ok($$select conductor.configure_kind('old.same', queue => 'blackhole')$$, 'QC208', NULL,
  'Once claimed, another login may not change it.');
reset role;

select * from finish();
rollback;
