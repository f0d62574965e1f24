CREATE TABLE `schema_changes` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`resource` text NOT NULL,
	`field` text NOT NULL,
	`kind` text NOT NULL,
	`before` text,
	`after` text NOT NULL,
	`mapped` integer DEFAULT false NOT NULL,
	`first_seen_at` text NOT NULL,
	`last_seen_at` text NOT NULL,
	`example_key` text,
	`count` integer DEFAULT 0 NOT NULL,
	`run_id` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `schema_changes_what_idx` ON `schema_changes` (`resource`,`field`,`kind`,`after`);--> statement-breakpoint
CREATE INDEX `schema_changes_seen_idx` ON `schema_changes` (`first_seen_at`);--> statement-breakpoint
CREATE TABLE `schema_fields` (
	`resource` text NOT NULL,
	`field` text NOT NULL,
	`types` text NOT NULL,
	`admitted` text,
	`mapped_as` text,
	`enum_values` text,
	`key_formats` text,
	`present` integer DEFAULT 0 NOT NULL,
	`nulls` integer DEFAULT 0 NOT NULL,
	`records` integer DEFAULT 0 NOT NULL,
	`first_seen_at` text NOT NULL,
	`last_seen_at` text NOT NULL,
	`removed_at` text,
	PRIMARY KEY(`resource`, `field`)
);
--> statement-breakpoint
ALTER TABLE `quarantine` ADD `position` integer;