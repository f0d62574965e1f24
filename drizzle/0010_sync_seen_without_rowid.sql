-- Custom SQL migration file, put your code below! --
-- sync_seen as a WITHOUT ROWID table: its primary key is its only index, so a scan's seen key is
-- one b-tree insert (and its lookup one search) instead of a row plus an index entry. Same columns
-- and key as drizzle's schema, which has no word for WITHOUT ROWID; a scan in progress keeps its keys.
CREATE TABLE `__sync_seen_new` (
	`resource` text NOT NULL,
	`record_id` text NOT NULL,
	PRIMARY KEY(`resource`, `record_id`)
) WITHOUT ROWID;--> statement-breakpoint
INSERT INTO `__sync_seen_new` (`resource`, `record_id`) SELECT `resource`, `record_id` FROM `sync_seen`;--> statement-breakpoint
DROP TABLE `sync_seen`;--> statement-breakpoint
ALTER TABLE `__sync_seen_new` RENAME TO `sync_seen`;
