CREATE TABLE `deliveries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`subscriber` text NOT NULL,
	`event_type` text NOT NULL,
	`ref` text NOT NULL,
	`webhook_id` text NOT NULL,
	`body` text NOT NULL,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` text NOT NULL,
	`lease_owner` text,
	`lease_until` text,
	`last_error` text,
	`last_status` integer,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`delivered_at` text,
	`dead_at` text,
	`redriven_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `deliveries_webhook_id_unique` ON `deliveries` (`webhook_id`);--> statement-breakpoint
CREATE INDEX `deliveries_subscriber_state_idx` ON `deliveries` (`subscriber`,`state`,`id`);--> statement-breakpoint
CREATE INDEX `deliveries_state_idx` ON `deliveries` (`state`,`id`);