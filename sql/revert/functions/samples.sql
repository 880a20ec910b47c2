-- Revert conductor:functions/samples from pg

begin;

drop function conductor.queue_series(timestamptz, timestamptz, interval, text[]);
drop function conductor.sample_queues();
drop function conductor._minute_of(timestamptz);

commit;
