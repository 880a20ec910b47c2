-- conductor.settings is the engine's configuration: every role reads it, only
-- conductor_admin changes it, and nobody adds or removes its one row.
begin;
select plan(7);

create role t_client;
create role t_worker;
create role t_admin;
grant conductor_client to t_client;
grant conductor_worker to t_worker;
grant conductor_admin to t_admin;

set local role t_client;
select is((select max_payload_bytes from conductor.settings), 1048576, 'A client reads the settings (the payload limit: 1 MiB).');
select throws_ok($$update conductor.settings set max_payload_bytes = 2000000000$$, '42501', null,
  'A client cannot change the settings.');
reset role;

set local role t_worker;
select throws_ok($$update conductor.settings set fake_clock = true$$, '42501', null,
  'A worker cannot switch the fake clock on.');
reset role;

set local role t_admin;
select lives_ok($$update conductor.settings set max_payload_bytes = 4096$$, 'An admin changes a limit.');
select throws_ok($$insert into conductor.settings default values$$, '42501', null,
  'Not even an admin adds a second settings row.');
select throws_ok($$delete from conductor.settings$$, '42501', null, 'Nobody deletes the settings row.');
select throws_ok($$update conductor.settings set max_payload_bytes = 0$$, '23514', null,
  'A limit must be positive.');
reset role;

select * from finish();
rollback;
