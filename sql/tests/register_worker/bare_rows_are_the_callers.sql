-- The bare worker row that heartbeat or sleep writes for a worker that never registered
-- (or that reap() forgot) records the login too (issue 25), so another login can neither
-- register over it nor deregister it (QC208), and save_log takes that worker's attempts'
-- lines from its own login. The rows are written by functions/heartbeat and functions/notify
-- (requests/h4.md): until they record the owner these tests are TODO.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2031-05-03 00:00:00+00';

create role t_billing;
grant conductor_worker to t_billing;
create role t_attacker;
grant conductor_worker to t_attacker;

select conductor.enqueue('k', '{}', 'bare') as task \gset
set local role t_billing;
select c.attempt_id as att from conductor.claim('bare-hb', array['bare'], 1) c \gset
select count(*) from conductor.heartbeat('bare-hb', array[:att]::bigint[]) \gset
select conductor.sleep('bare-sl', array['bare']) as slept \gset
select conductor.sleep('bare-sl2', array['bare']) as slept \gset
reset role;

select results_eq($$select id, owner from conductor.workers where id like 'bare-%' order by id$$,
  $$values ('bare-hb'::text, 't_billing'::text), ('bare-sl', 't_billing'), ('bare-sl2', 't_billing')$$,
  'The bare rows of heartbeat and sleep record the login that wrote them.');
set local role t_attacker;
select throws_ok($$select conductor.register_worker('bare-sl', kinds => '{nothing}')$$, 'QC208', NULL,
  'Another login cannot register over a sleep''s bare row.');
select throws_ok($$select conductor.deregister_worker('bare-sl2')$$, 'QC208', NULL,
  'Nor deregister one.');
select throws_ok(format($$select conductor.save_log(%s, '[{"message": "forged"}]')$$, :att), 'QC208', NULL,
  'Nor write into the attempts of a worker whose heartbeat wrote its row.');
reset role;

set local role t_billing;
select lives_ok(format($$select conductor.save_log(%s, '[{"message": "mine"}]')$$, :att),
  'The worker''s own login saves its attempts'' lines.');
select lives_ok($$select conductor.register_worker('bare-hb', kinds => '{k}')$$,
  'And registers over its bare row.');
reset role;

select * from finish();
rollback;
