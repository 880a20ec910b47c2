-- conductor._check_owner(what, name, owner), the one ownership rule (issue 25): it returns
-- for a row of no owner (stored before v0.3.0), for the caller's own row and for a member of
-- conductor_admin, and raises QC208 naming what, name and owner (cut by _echo) otherwise.
-- The caller is conductor._caller(): the role the session SET ROLE to, as inside the API's
-- definer functions, here a definer wrapper (the helper is granted to nobody).
begin;
select plan(9);
\ir ../helpers.psql

create role t_billing;
grant conductor_worker to t_billing;
create role t_attacker;
grant conductor_worker to t_attacker;
create role t_admin;
grant conductor_admin to t_admin;

create function conductor_tests.check_owner(what text, name text, owner text) returns text
  language sql security definer
  set search_path = pg_catalog, pg_temp
as $$ select conductor._check_owner(check_owner.what, check_owner.name, check_owner.owner)::text $$;
create function conductor_tests.caller() returns text
  language sql security definer
  set search_path = pg_catalog, pg_temp
as $$ select conductor._caller() $$;
grant usage on schema conductor_tests to t_billing, t_attacker, t_admin;
grant execute on all functions in schema conductor_tests to t_billing, t_attacker, t_admin;

set local role t_billing;
select is(conductor_tests.caller(), 't_billing', 'Inside a definer function the caller is the role set, not the definer.');
select lives_ok($$select conductor_tests.check_owner('kind', 'invoice', 't_billing')$$,
  'The login that declared a row may change it.');
select lives_ok($$select conductor_tests.check_owner('kind', 'invoice', null)$$,
  'A row of no owner (stored before v0.3.0) may be changed by any login: it claims it.');
reset role;

set local role t_attacker;
select throws_ok($$select conductor_tests.check_owner('kind', 'invoice', 't_billing')$$, 'QC208',
  'kind ''invoice'' was declared by login ''t_billing'': only that login or an admin may change it',
  'Another login is refused with QC208, the message naming what, the name and the owner.');
select throws_like($$select conductor_tests.check_owner('worker', repeat('w', 500), 't_billing')$$,
  'worker ''' || repeat('w', 100) || '''…(500 bytes) was declared by login ''t_billing''%',
  'A long name is cut in the message, as every echoed value.');
select throws_ok($$select conductor_tests.check_owner('kind', 'invoice', '')$$, 'QC208', NULL,
  'An empty owner is an owner, not "none".');
reset role;

set local role t_admin;
select lives_ok($$select conductor_tests.check_owner('kind', 'invoice', 't_billing')$$,
  'A member of conductor_admin may change any login''s row.');
reset role;

select lives_ok($$select conductor_tests.check_owner('kind', 'invoice', 't_billing')$$,
  'A superuser counts as an admin.');

-- the detail names the caller
set local role t_attacker;
create function pg_temp.detail_of_refusal() returns text language plpgsql as $$
declare
  v_detail text;
begin
  perform conductor_tests.check_owner('kind', 'invoice', 't_billing');
  return null;
exception when sqlstate 'QC208' then
  get stacked diagnostics v_detail = pg_exception_detail;
  return v_detail;
end
$$;
select is(pg_temp.detail_of_refusal(), 'The caller is ''t_attacker''.', 'The detail names the refused caller.');
reset role;

select * from finish();
rollback;
