DROP INDEX "outbox_order_idx";--> statement-breakpoint
CREATE INDEX "outbox_unsettled_key_idx" ON "outbox" USING btree ("order_key","id") WHERE state IN ('queued', 'sending');