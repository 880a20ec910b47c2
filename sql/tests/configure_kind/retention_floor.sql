-- A worker login can never shorten retention below what the admin allows (issue 25): as
-- conductor_worker, configure_kind refuses a retain_succeeded or retain_failed under
-- conductor.settings.min_retention (1 day by default) with QC106 naming the floor, when it
-- creates a kind or changes one; the floor itself and NULL (the settings') are accepted; an
-- admin sets less, and lowers the floor for everyone. A kind stored under the floor (by
-- v0.2.0, or before an admin raised it) may still be re-declared exactly as stored: no change.
begin;
select plan(11);
\ir ../helpers.psql

create role t_worker;
grant conductor_worker to t_worker;
create role t_admin;
grant conductor_admin to t_admin;

select is((select min_retention from conductor.settings), interval '1 day', 'The floor is 1 day by default.');

set local role t_worker;
select throws_ok($$select conductor.configure_kind('fl.new', retain_succeeded => '0 s', retain_failed => '0 s')$$,
  'QC106', 'invalid retention for kind ''fl.new'': retain_succeeded 00:00:00 and retain_failed 00:00:00 must be at least 1 day (conductor.settings.min_retention) for a login without conductor_admin',
  'A worker login cannot create a kind that keeps its runs for 0 s (QC106, naming the floor).');
select throws_ok($$select conductor.configure_kind('fl.new', retain_failed => '23 hours 59 minutes')$$, 'QC106', NULL,
  'Nor for a minute under the floor, failed runs alone.');
select lives_ok($$select conductor.configure_kind('fl.new', retain_succeeded => '1 day', retain_failed => null)$$,
  'The floor itself, and NULL (the settings''), are accepted.');
select throws_ok($$select conductor.configure_kind('fl.new', retain_succeeded => '1 hour')$$, 'QC106', NULL,
  'The kind''s own login cannot shorten it under the floor either.');
reset role;
select is((select (retain_succeeded, retain_failed)::text from conductor.kinds where kind = 'fl.new'),
  (interval '1 day', null::interval)::text, 'The refused calls changed nothing.');

set local role t_admin;
select lives_ok($$select conductor.configure_kind('fl.admin', retain_succeeded => '0 s', retain_failed => '1 hour')$$,
  'An admin gives a kind less than the floor.');
reset role;

-- a row under the floor that no check saw (v0.2.0's), now the worker's
insert into conductor.kinds (kind, retain_succeeded, updated_at, owner) values ('fl.old', '1 hour', now(), 't_worker');
set local role t_worker;
select lives_ok($$select conductor.configure_kind('fl.old', retain_succeeded => '1 hour')$$,
  'Re-declaring a kind under the floor exactly as stored succeeds: no change (apply_retention applies the floor).');
select throws_ok($$select conductor.configure_kind('fl.old', retain_succeeded => '2 hours')$$, 'QC106', NULL,
  'Changing it to another value under the floor is refused.');
reset role;

update conductor.settings set min_retention = '1 hour';
set local role t_worker;
select lives_ok($$select conductor.configure_kind('fl.new', retain_succeeded => '1 hour', retain_failed => '1 hour')$$,
  'Once an admin lowers the floor, a worker login may go down to it.');
select throws_ok($$select conductor.configure_kind('fl.new', retain_succeeded => '59 minutes')$$, 'QC106',
  'invalid retention for kind ''fl.new'': retain_succeeded 00:59:00 and retain_failed NULL must be at least 01:00:00 (conductor.settings.min_retention) for a login without conductor_admin',
  'And no lower.');
reset role;

select * from finish();
rollback;
