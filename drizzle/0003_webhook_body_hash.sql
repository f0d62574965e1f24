DROP INDEX `webhook_events_webhook_id_unique`;--> statement-breakpoint
ALTER TABLE `webhook_events` ADD `body_hash` text;--> statement-breakpoint
ALTER TABLE `webhook_events` ADD `id_reused` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `webhook_events` ADD `event_status` text;--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_events_id_body_idx` ON `webhook_events` (`webhook_id`,`body_hash`);