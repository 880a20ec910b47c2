-- Verify conductor:functions/updates on pg

begin;

select 1 / pg_catalog.has_function_privilege('conductor_client', 'conductor.send_update(bigint, text, jsonb)', 'execute')::int;
select 1 / pg_catalog.has_function_privilege('conductor_client', 'conductor.update_reply(bigint)', 'execute')::int;
select 1 / pg_catalog.has_function_privilege('conductor_worker', 'conductor.wait_update(bigint, text, text, interval)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client', 'conductor.reply_update(bigint, bigint, jsonb)', 'execute'))::int;

rollback;
