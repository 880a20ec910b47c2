-- register_worker stores the kinds a worker serves (NULL: every kind) and a second call
-- replaces them. Registered as conductor_worker, the role it is granted to.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;
select conductor.register_worker('w-kinds', queues => '{q}', kinds => '{send_email,resize}') as r \gset
select conductor.register_worker('w-every', queues => '{q}') as r \gset
reset role;

select is((select kinds from conductor.workers where id = 'w-kinds'), array['send_email', 'resize'],
  'The kinds are stored as given.');
select is((select kinds from conductor.workers where id = 'w-every'), null::text[],
  'A worker that names no kinds serves every kind (NULL).');

set local role t_worker;
select conductor.register_worker('w-kinds', queues => '{q}', kinds => '{resize}') as r \gset
reset role;
select is((select kinds from conductor.workers where id = 'w-kinds'), array['resize'],
  'Registering again replaces them.');

select * from finish();
rollback;
