-- Revert conductor:functions/bus from pg
--
-- functions/notify (deployed before) calls conductor._publish only while a session
-- subscribes to 'tasks' or '*': the subscriptions go first, so the engine never reaches
-- the dropped function (and nobody can subscribe again without subscribe()).

begin;

delete from conductor.subscriptions;
drop function conductor.exclusive(text);
drop function conductor.unsubscribe(text[]);
drop function conductor.subscribe(text[]);
drop function conductor.publish(text, jsonb, text);
drop function conductor._publish(text, jsonb, text);
drop function conductor._bus_message(text, jsonb, text);

commit;
