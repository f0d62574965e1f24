DROP INDEX "outbox_due_idx";--> statement-breakpoint
CREATE INDEX "outbox_queued_due_idx" ON "outbox" USING btree ("next_attempt_at") WHERE state = 'queued';