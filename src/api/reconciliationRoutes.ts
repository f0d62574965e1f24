import type { Hono } from 'hono';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import {
  FINDING_KIND_NAMES,
  FINDING_SEVERITIES,
  type FindingKind,
  type FindingSeverity,
} from '../reconcile/findingKinds.js';
import {
  BAD_ISSUANCE,
  FINDING_STATES,
  issuanceFilter,
  RECONCILE_LIMIT_DEFAULT,
  RECONCILE_LIMIT_MAX,
  UNKNOWN_KIND,
  UNKNOWN_SEVERITY,
  UNKNOWN_STATE,
} from '../reconcile/reconcileQuery.js';
import { readReconciliation } from '../reconcile/reconciliationReads.js';
import type { ScriptStore } from '../store/script.js';
import { byteOrderCollation } from './mirrorQueries.js';
import { cursorKeyFor, decodeCursor, encodeCursor } from './pageCursor.js';
import { cursorParam, decimalParam, parseQuery, type RouteSpec } from './routeSpec.js';
import { reconciliationPage } from './schemas/reconciliation.js';

/** `GET /v1/reconciliation`: the findings of the reconciliation and the balance sheets (issue 29). */

const reconciliationQuery = z.strictObject({
  issuance: z
    .string()
    .refine((s) => issuanceFilter(s) !== undefined, BAD_ISSUANCE)
    .optional()
    .describe("one issuance's findings and balance sheets (default: every issuance)"),
  kind: z
    .enum(FINDING_KIND_NAMES as [string, ...string[]], { error: UNKNOWN_KIND })
    .optional()
    .describe('only findings of this kind (default: every kind)'),
  severity: z
    .enum(FINDING_SEVERITIES as [string, ...string[]], { error: UNKNOWN_SEVERITY })
    .optional()
    .describe('only findings of this severity (default: every one)'),
  state: z
    .enum(FINDING_STATES, { error: UNKNOWN_STATE })
    .optional()
    .describe('open findings, resolved ones, or all (default: open)'),
  cursor: cursorParam,
  limit: decimalParam(1, RECONCILE_LIMIT_MAX)
    .optional()
    .describe(
      `most findings, and most balance sheets, in the page, 1-${RECONCILE_LIMIT_MAX} (default: ${RECONCILE_LIMIT_DEFAULT})`,
    ),
});

/** What a cursor of this route holds (reconcile/reconcileQuery.ts ReconcileCursor). */
const cursorShape = z.strictObject({ f: z.number().int().min(0), i: z.string(), u: z.string() });

/** The route specs of this file, for /openapi.json. */
export const RECONCILIATION_ROUTE_SPECS: RouteSpec[] = [
  {
    method: 'get',
    path: '/v1/reconciliation',
    operationId: 'getReconciliation',
    summary:
      "The marketplace's reported operations against the registry's data: findings (open by default, in the order first found) and balance sheets per issuance and unit, in kg, paginated by cursor",
    query: reconciliationQuery,
    responses: {
      '200': { description: 'a page of findings and balance sheets', schema: reconciliationPage },
      '400':
        'an unknown kind, severity or state (the allowed ones are named), a bad issuance, cursor or limit',
    },
  },
];

/** The route, reading through the store's reconciliation seam. */
export function registerReconciliationRoutes(app: Hono, ctx: AppContext, store: ScriptStore): void {
  const cursorKey = cursorKeyFor(ctx.config.api.token);
  const byteOrder = byteOrderCollation(store);
  app.get('/v1/reconciliation', async (c) => {
    const q = parseQuery(c, reconciliationQuery);
    const after = q.cursor === undefined ? null : decodeCursor(q.cursor, cursorShape, cursorKey);
    const page = await readReconciliation(
      (s) => store.read(s),
      {
        issuance: q.issuance === undefined ? null : (issuanceFilter(q.issuance) ?? null),
        kind: (q.kind as FindingKind | undefined) ?? null,
        severity: (q.severity as FindingSeverity | undefined) ?? null,
        state: q.state ?? 'open',
        after,
        limit: q.limit ?? RECONCILE_LIMIT_DEFAULT,
      },
      { statuses: ctx.config.reconcile.retire_match.statuses, byteOrder: await byteOrder() },
    );
    const answer: z.input<typeof reconciliationPage> = {
      ...page,
      next: page.next === null ? null : encodeCursor({ ...page.next }, cursorKey),
    };
    return c.json(answer);
  });
}
