CREATE TABLE `daemon_state` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `webhook_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`webhook_id` text NOT NULL,
	`received_at` text NOT NULL,
	`event_type` text,
	`marketplaceTransactionRef` text,
	`decision` text,
	`reason` text,
	`body` text NOT NULL,
	`outbox_id` integer,
	`outcome` text NOT NULL,
	`applied_at` text,
	FOREIGN KEY (`outbox_id`) REFERENCES `outbox`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_events_webhook_id_unique` ON `webhook_events` (`webhook_id`);--> statement-breakpoint
CREATE INDEX `webhook_events_ref_idx` ON `webhook_events` (`marketplaceTransactionRef`,`outcome`);--> statement-breakpoint
CREATE TABLE `webhook_rejections` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`at` text NOT NULL,
	`status` integer NOT NULL,
	`reason` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_rejections_at_idx` ON `webhook_rejections` (`at`);--> statement-breakpoint
CREATE TABLE `custody_issuances` (
	`issuanceId` text PRIMARY KEY NOT NULL,
	`issuanceProjectId` integer,
	`issuanceVerificationRound` integer,
	`issuanceVerificationBody` text,
	`issuanceVerificationDate` text,
	`issuanceVintageYear` integer,
	`issuanceCreditingStartDate` text,
	`issuanceCreditingEndDate` text,
	`issuanceBlockchainNetwork` text,
	`issuanceAmount` real,
	`issuanceDate` text,
	`isCorsiaCompliant` integer,
	`issuanceLinkRegistry` text,
	`issuanceLinkPublicTrust` text,
	`issuanceLinkNftMarket` text,
	`_raw` text NOT NULL,
	`_hash` text NOT NULL,
	`_first_seen_at` text NOT NULL,
	`_last_seen_at` text NOT NULL,
	`_removed_at` text,
	`_custody_ended_at` text
);
--> statement-breakpoint
CREATE TABLE `custody_projects` (
	`projectID` text PRIMARY KEY NOT NULL,
	`projectName` text,
	`cobenefit` text,
	`projectDescription` text,
	`projectTags` text,
	`currentRegistry` text,
	`originRegistry` text,
	`originProjectID` text,
	`projectStatus` text,
	`ProjectStatusDate` text,
	`projectStartDate` text,
	`projectEndDate` text,
	`projectProgram` text,
	`projectSector` text,
	`projectType` text,
	`projectCountry` text,
	`projectRegion` text,
	`projectGeographicIdentifier` text,
	`projectMethodologyName` text,
	`projectMethodologyVersion` text,
	`projectValidationBody` text,
	`projectValidationDate` text,
	`projectUnitMetric` text,
	`isProjectCoveredByNDC` integer,
	`projectNDCInformation` text,
	`totalEstimatedUnits` real,
	`annualEstimatedUnits` real,
	`projectDeveloper` text,
	`projectLinkProvider` text,
	`projectLinkPublicTrust` text,
	`projectLinkRating` text,
	`projectLinkMap` text,
	`_raw` text NOT NULL,
	`_hash` text NOT NULL,
	`_first_seen_at` text NOT NULL,
	`_last_seen_at` text NOT NULL,
	`_removed_at` text,
	`_custody_ended_at` text
);
--> statement-breakpoint
CREATE TABLE `custody_units` (
	`unitsOperationID` text PRIMARY KEY NOT NULL,
	`unitsIssuanceID` text,
	`unitsType` text,
	`unitsMarketplace` text,
	`unitsLinkMarketplace` text,
	`unitsMarketplaceID` text,
	`unitsStatus` text,
	`unitsDate` text,
	`unitsQuantity` real,
	`unitsRetirementNotes` text,
	`unitsAccountOriginID` integer,
	`unitsAccountDestinationID` integer,
	`unitsBlockchainNetwork` text,
	`unitsLinkRegistry` text,
	`unitsLinkNftMarket` text,
	`_raw` text NOT NULL,
	`_hash` text NOT NULL,
	`_first_seen_at` text NOT NULL,
	`_last_seen_at` text NOT NULL,
	`_removed_at` text,
	`_custody_ended_at` text
);
--> statement-breakpoint
CREATE TABLE `issuances` (
	`issuanceId` text PRIMARY KEY NOT NULL,
	`issuanceProjectId` integer,
	`issuanceVerificationRound` integer,
	`issuanceVerificationBody` text,
	`issuanceVerificationDate` text,
	`issuanceVintageYear` integer,
	`issuanceCreditingStartDate` text,
	`issuanceCreditingEndDate` text,
	`issuanceBlockchainNetwork` text,
	`issuanceAmount` real,
	`issuanceDate` text,
	`isCorsiaCompliant` integer,
	`issuanceLinkRegistry` text,
	`issuanceLinkPublicTrust` text,
	`issuanceLinkNftMarket` text,
	`_raw` text NOT NULL,
	`_hash` text NOT NULL,
	`_first_seen_at` text NOT NULL,
	`_last_seen_at` text NOT NULL,
	`_removed_at` text
);
--> statement-breakpoint
CREATE INDEX `issuances_project_idx` ON `issuances` (`issuanceProjectId`);--> statement-breakpoint
CREATE TABLE `projects` (
	`projectID` text PRIMARY KEY NOT NULL,
	`projectName` text,
	`cobenefit` text,
	`projectDescription` text,
	`projectTags` text,
	`currentRegistry` text,
	`originRegistry` text,
	`originProjectID` text,
	`projectStatus` text,
	`ProjectStatusDate` text,
	`projectStartDate` text,
	`projectEndDate` text,
	`projectProgram` text,
	`projectSector` text,
	`projectType` text,
	`projectCountry` text,
	`projectRegion` text,
	`projectGeographicIdentifier` text,
	`projectMethodologyName` text,
	`projectMethodologyVersion` text,
	`projectValidationBody` text,
	`projectValidationDate` text,
	`projectUnitMetric` text,
	`isProjectCoveredByNDC` integer,
	`projectNDCInformation` text,
	`totalEstimatedUnits` real,
	`annualEstimatedUnits` real,
	`projectDeveloper` text,
	`projectLinkProvider` text,
	`projectLinkPublicTrust` text,
	`projectLinkRating` text,
	`projectLinkMap` text,
	`_raw` text NOT NULL,
	`_hash` text NOT NULL,
	`_first_seen_at` text NOT NULL,
	`_last_seen_at` text NOT NULL,
	`_removed_at` text
);
--> statement-breakpoint
CREATE INDEX `projects_status_idx` ON `projects` (`projectStatus`);--> statement-breakpoint
CREATE INDEX `projects_country_idx` ON `projects` (`projectCountry`);--> statement-breakpoint
CREATE TABLE `unit_operations` (
	`unitsOperationID` text PRIMARY KEY NOT NULL,
	`unitsIssuanceID` text,
	`unitsType` text,
	`unitsMarketplace` text,
	`unitsLinkMarketplace` text,
	`unitsMarketplaceID` text,
	`unitsStatus` text,
	`unitsDate` text,
	`unitsQuantity` real,
	`unitsRetirementNotes` text,
	`unitsAccountOriginID` integer,
	`unitsAccountDestinationID` integer,
	`unitsBlockchainNetwork` text,
	`unitsLinkRegistry` text,
	`unitsLinkNftMarket` text,
	`_raw` text NOT NULL,
	`_hash` text NOT NULL,
	`_first_seen_at` text NOT NULL,
	`_last_seen_at` text NOT NULL,
	`_removed_at` text,
	`_position` integer
);
--> statement-breakpoint
CREATE INDEX `unit_operations_issuance_idx` ON `unit_operations` (`unitsIssuanceID`);--> statement-breakpoint
CREATE INDEX `unit_operations_status_idx` ON `unit_operations` (`unitsStatus`);--> statement-breakpoint
CREATE INDEX `unit_operations_position_idx` ON `unit_operations` (`_position`);--> statement-breakpoint
CREATE TABLE `outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`marketplaceTransactionRef` text NOT NULL,
	`operationType` text NOT NULL,
	`order_key` text,
	`body` text NOT NULL,
	`body_hash` text NOT NULL,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` text NOT NULL,
	`lease_owner` text,
	`lease_until` text,
	`last_error` text,
	`last_status` integer,
	`response` text,
	`decision_reason` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`accepted_at` text,
	`decided_at` text,
	`finished_at` text,
	`scrubbed_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `outbox_marketplaceTransactionRef_unique` ON `outbox` (`marketplaceTransactionRef`);--> statement-breakpoint
CREATE INDEX `outbox_due_idx` ON `outbox` (`state`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `outbox_order_idx` ON `outbox` (`order_key`,`id`);--> statement-breakpoint
CREATE TABLE `outbox_attempts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`outbox_id` integer NOT NULL,
	`started_at` text NOT NULL,
	`duration_ms` integer NOT NULL,
	`status_code` integer,
	`error` text,
	FOREIGN KEY (`outbox_id`) REFERENCES `outbox`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `outbox_attempts_row_idx` ON `outbox_attempts` (`outbox_id`);--> statement-breakpoint
CREATE TABLE `changes` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`resource` text NOT NULL,
	`record_id` text NOT NULL,
	`kind` text NOT NULL,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `changes_record_idx` ON `changes` (`resource`,`record_id`);--> statement-breakpoint
CREATE TABLE `custody_ids` (
	`kind` text NOT NULL,
	`id` text NOT NULL,
	`source` text NOT NULL,
	`added_at` text NOT NULL,
	`ended_at` text,
	PRIMARY KEY(`kind`, `id`)
);
--> statement-breakpoint
CREATE TABLE `quarantine` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`resource` text NOT NULL,
	`record_id` text,
	`run_id` integer,
	`reason` text NOT NULL,
	`raw` text NOT NULL,
	`at` text NOT NULL,
	`resolved_at` text
);
--> statement-breakpoint
CREATE INDEX `quarantine_open_idx` ON `quarantine` (`resource`,`resolved_at`);--> statement-breakpoint
CREATE TABLE `sync_checkpoints` (
	`resource` text PRIMARY KEY NOT NULL,
	`run_id` integer NOT NULL,
	`mode` text NOT NULL,
	`next_offset` integer NOT NULL,
	`scan_started_at` text NOT NULL,
	`state` text,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `sync_runs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`resource` text NOT NULL,
	`mode` text NOT NULL,
	`trigger` text NOT NULL,
	`started_at` text NOT NULL,
	`finished_at` text,
	`status` text NOT NULL,
	`fetched` integer DEFAULT 0 NOT NULL,
	`inserted` integer DEFAULT 0 NOT NULL,
	`updated` integer DEFAULT 0 NOT NULL,
	`removed` integer DEFAULT 0 NOT NULL,
	`unchanged` integer DEFAULT 0 NOT NULL,
	`quarantined` integer DEFAULT 0 NOT NULL,
	`pages` integer DEFAULT 0 NOT NULL,
	`error` text,
	`resumed_from` integer,
	`pid` integer
);
--> statement-breakpoint
CREATE INDEX `sync_runs_resource_idx` ON `sync_runs` (`resource`,`id`);--> statement-breakpoint
CREATE TABLE `sync_seen` (
	`resource` text NOT NULL,
	`record_id` text NOT NULL,
	PRIMARY KEY(`resource`, `record_id`)
);
