-- A worker row recorded before v0.3.0 has no owner (NULL, as the upgrade leaves it): the
-- first login that registers that worker id claims it, and from then on it is that login's
-- (issue 25). So is a bare row of no owner (heartbeat's or sleep's for a worker that never
-- registered, from v0.2.0).
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2031-05-02 00:00:00+00';

create role t_billing;
grant conductor_worker to t_billing;
create role t_attacker;
grant conductor_worker to t_attacker;

insert into conductor.workers (id, started_at, last_seen_at, kinds) values ('old-w', now(), now(), '{invoice}');
set local role t_billing;
select lives_ok($$select conductor.register_worker('old-w', kinds => '{invoice}')$$,
  'A login registers a worker whose row has no owner.');
reset role;
select is((select owner from conductor.workers where id = 'old-w'), 't_billing', 'The row is that login''s now.');
set local role t_attacker;
select throws_ok($$select conductor.deregister_worker('old-w')$$, 'QC208', NULL,
  'Another login can no longer deregister it.');
reset role;

insert into conductor.workers (id, started_at, last_seen_at) values ('bare-w', now(), now());
set local role t_attacker;
select lives_ok($$select conductor.register_worker('bare-w', kinds => '{receipt}')$$,
  'A bare row of no owner is claimed by the first login that registers it...');
reset role;
set local role t_billing;
select throws_ok($$select conductor.register_worker('bare-w', kinds => '{invoice}')$$, 'QC208', NULL,
  '...and is that login''s from then on.');
reset role;

select * from finish();
rollback;
