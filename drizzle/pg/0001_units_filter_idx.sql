DROP INDEX "unit_operations_issuance_idx";--> statement-breakpoint
DROP INDEX "unit_operations_status_idx";--> statement-breakpoint
CREATE INDEX "unit_operations_issuance_key_idx" ON "unit_operations" USING btree ("unitsIssuanceID","unitsOperationID");--> statement-breakpoint
CREATE INDEX "unit_operations_status_key_idx" ON "unit_operations" USING btree ("unitsStatus","unitsOperationID");--> statement-breakpoint
CREATE INDEX "unit_operations_date_key_idx" ON "unit_operations" USING btree ("unitsDate","unitsOperationID");--> statement-breakpoint
CREATE INDEX "unit_operations_status_date_key_idx" ON "unit_operations" USING btree ("unitsStatus","unitsDate","unitsOperationID");