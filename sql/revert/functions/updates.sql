-- Revert conductor:functions/updates from pg

begin;

drop function conductor.update_reply(bigint);
drop function conductor.reply_update(bigint, bigint, jsonb);
drop function conductor.wait_update(bigint, text, text, interval);
drop function conductor.send_update(bigint, text, jsonb);
drop function conductor._check_update_name(text);
drop function conductor._update_event(bigint, text, integer);

commit;
