CREATE TABLE `reconciliation_findings` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`kind` text NOT NULL,
	`subject` text NOT NULL,
	`subject_id` text NOT NULL,
	`issuance_id` text,
	`unit_id` text,
	`ref` text,
	`severity` text NOT NULL,
	`expected_kg` real,
	`found_kg` real,
	`detail` text NOT NULL,
	`first_seen_at` text NOT NULL,
	`last_seen_at` text NOT NULL,
	`resolved_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `reconciliation_findings_what_idx` ON `reconciliation_findings` (`kind`,`subject`,`subject_id`);--> statement-breakpoint
CREATE INDEX `reconciliation_findings_issuance_idx` ON `reconciliation_findings` (`issuance_id`);--> statement-breakpoint
CREATE INDEX `reconciliation_findings_open_idx` ON `reconciliation_findings` (`resolved_at`,`severity`);--> statement-breakpoint
CREATE TABLE `reconciliation_ledger` (
	`outbox_id` integer PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`issuance_id` text,
	`unit_id` text,
	`amount_kg` real,
	FOREIGN KEY (`outbox_id`) REFERENCES `outbox`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `reconciliation_ledger_issuance_idx` ON `reconciliation_ledger` (`issuance_id`);--> statement-breakpoint
CREATE INDEX `reconciliation_ledger_unit_idx` ON `reconciliation_ledger` (`unit_id`);