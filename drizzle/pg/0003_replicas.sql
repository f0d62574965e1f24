CREATE TABLE "replicas" (
	"lease_owner" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"last_heartbeat_at" timestamp with time zone NOT NULL,
	"holds" text NOT NULL
);
