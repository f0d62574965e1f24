CREATE TABLE `replicas` (
	`lease_owner` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`started_at` text NOT NULL,
	`last_heartbeat_at` text NOT NULL,
	`holds` text NOT NULL
);
