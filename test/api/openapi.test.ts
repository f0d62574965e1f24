import { execFile } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../src/api/openapi.js';
import { routeSpecs } from '../../src/api/server.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { tempDir } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { until } from '../ops/child.js';
import { REJECTION_REASON, type SeededApi, seededApi, TOKEN } from '../ops/seed.js';
import { sqliteDispatcher, transfer } from '../outbox/fixtures.js';
import { CLIENT, PACKAGE_JSON, TSCONFIG, WRONG } from './generatedClient.js';
import { responseSchema, schemaProblems } from './schemaCheck.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const ROOT = path.resolve(import.meta.dirname, '../..');
/** A package's command line, run by this Node (the project's), not whatever `node` is on PATH. */
const bin = (pkg: string, name: string) => {
  const manifest = require.resolve(`${pkg}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8')) as { bin: Record<string, string> };
  return path.join(path.dirname(manifest), bin[name]!);
};
// Offline: no telemetry, no update check (both would reach the internet).
const TOOL_ENV = {
  ...process.env,
  REDOCLY_TELEMETRY: 'off',
  REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  NO_COLOR: '1',
};

/** Runs a command to its end; a non-zero exit is an answer, not a throw. */
async function runTool(args: string[], cwd: string, env: NodeJS.ProcessEnv = TOOL_ENV) {
  try {
    const { stdout, stderr } = await run(process.execPath, args, { cwd, env, maxBuffer: 64 << 20 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

let h: SeededApi;
let call: ReturnType<typeof apiCaller>;
// biome-ignore lint/suspicious/noExplicitAny: the document is arbitrary JSON read by the checks
let doc: any;
const work = tempDir('vcu-sync-openapi-');

beforeAll(async () => {
  h = await seededApi();
  call = apiCaller(h.base, TOKEN);
  const res = await call('GET', '/openapi.json');
  expect(res.status).toBe(200);
  doc = res.json;
  writeFileSync(path.join(work.dir, 'openapi.json'), res.text);
});
afterAll(async () => {
  await h?.close();
  work.cleanup();
});

describe('/openapi.json', () => {
  it('passes redocly lint with the recommended rules: no error, only the warnings accepted', async () => {
    const lint = await runTool(
      [
        bin('@redocly/cli', 'redocly'),
        'lint',
        '--extends',
        'recommended',
        '--format',
        'json',
        'openapi.json',
      ],
      work.dir,
    );
    const report = JSON.parse(lint.stdout) as {
      totals: { errors: number };
      problems: Array<{ ruleId: string; severity: string; location: Array<{ pointer: string }> }>;
    };
    expect(report.problems.filter((p) => p.severity === 'error')).toEqual([]);
    expect(report.totals.errors).toBe(0);
    expect(lint.code).toBe(0);
    // The probes answer whoever asks, so they have no 4xx; every other warning is a regression.
    expect(report.problems.map((p) => `${p.ruleId} ${p.location[0]?.pointer}`).sort()).toEqual([
      'operation-4xx-response #/paths/~1healthz/get/responses',
      'operation-4xx-response #/paths/~1readyz/get/responses',
    ]);
  });

  it('names every operation, and types every answer', () => {
    const ids = new Set<string>();
    type Answer = { content: Record<string, { schema: unknown }> };
    type Operation = { operationId: string; responses: Record<string, Answer> };
    for (const [p, methods] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, op] of Object.entries(methods)) {
        expect(op.operationId, `${method} ${p}`).toMatch(/^[a-z][A-Za-z0-9]*$/);
        expect(ids.has(op.operationId), op.operationId).toBe(false);
        ids.add(op.operationId);
        for (const [code, answer] of Object.entries(op.responses)) {
          const [type] = Object.keys(answer.content);
          const schema = answer.content[type!]!.schema;
          if (type === 'application/json') expect(schema, `${method} ${p} ${code}`).not.toEqual({});
        }
      }
    }
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/' })]);
    const body = doc.components.schemas.Notification;
    expect(body.required).not.toContain('marketplaceId');
    expect(body.required).toEqual(expect.arrayContaining(['operationType', 'marketplaceTransactionRef']));
    expect(body.properties.transactionUnit.enum).toEqual(['tCO2e', 'kgCO2e']);
    expect(body.properties.operationType.enum).toBeUndefined();
    expect(body.properties.operationType.examples).toContain('Retire');
  });

  it('refuses to build when a success answer has no schema or an operationId repeats', () => {
    const base = { method: 'get' as const, path: '/x', summary: 's' };
    expect(() =>
      buildOpenApi([{ ...base, operationId: 'getX', responses: { '200': { description: 'x' } } }], {
        version: '1',
      }),
    ).toThrow(/getX answers 200 with no schema/);
    const twice = [
      { ...base, operationId: 'getX', responses: {} },
      { ...base, path: '/y', operationId: 'getX', responses: {} },
    ];
    expect(() => buildOpenApi(twice, { version: '1' })).toThrow(/operationId getX/);
  });

  it('documents the operationType this daemon sends, from outbox.wire_spelling', () => {
    const config = h.ctx.config;
    const custom = {
      ...config,
      outbox: { ...config.outbox, wire_spelling: { ...config.outbox.wire_spelling, retire: 'Retire' } },
    };
    const other = buildOpenApi(routeSpecs(custom), { version: '1' }) as typeof doc;
    expect(other.components.schemas.OperationTypeSent.enum).toEqual([
      'Tokenization',
      'Transfer',
      'Retire',
      'Detokenization',
    ]);
    expect(doc.components.schemas.OperationTypeSent.enum).toEqual([
      'Tokenization',
      'Transfer',
      'retire',
      'Detokenization',
    ]);
  });
});

describe('every answer is what the document says', () => {
  it('lists, records, changes, operations, status and errors fit their schemas, with no field undocumented', async () => {
    const firstOf = async (list: string) => (await call('GET', list)).json.items[0];
    const project = await firstOf('/v1/projects');
    const issuance = await firstOf('/v1/issuances');
    const unit = await firstOf('/v1/units');
    const custodyProject = await firstOf('/v1/custody/projects');
    const cases: Array<[method: string, docPath: string, url: string, body?: unknown]> = [
      ['get', '/healthz', '/healthz'],
      ['get', '/readyz', '/readyz'],
      ['get', '/status', '/status'],
      ['get', '/v1/projects', '/v1/projects?limit=5'],
      ['get', '/v1/projects/{id}', `/v1/projects/${project.projectID}`],
      ['get', '/v1/issuances', '/v1/issuances?limit=5'],
      ['get', '/v1/issuances/{id}', `/v1/issuances/${issuance.issuanceId}`],
      ['get', '/v1/units', '/v1/units?limit=5'],
      ['get', '/v1/units/{id}', `/v1/units/${encodeURIComponent(unit.unitsOperationID)}`],
      ['get', '/v1/custody/projects', '/v1/custody/projects'],
      ['get', '/v1/custody/projects/{id}', `/v1/custody/projects/${custodyProject.projectID}`],
      ['get', '/v1/custody/issuances', '/v1/custody/issuances'],
      ['get', '/v1/custody/units', '/v1/custody/units'],
      ['get', '/v1/changes', '/v1/changes?limit=50'],
      ['get', '/v1/schema', '/v1/schema'],
      ['get', '/v1/schema', '/v1/schema?resource=units&since=2020-01-01&limit=5'],
      ['get', '/v1/schema', '/v1/schema?resource=widgets'],
      ['get', '/v1/operations', '/v1/operations'],
      ['get', '/v1/operations/{ref}', '/v1/operations/status-rej-1'],
      ['get', '/v1/operations/{ref}', '/v1/operations/status-fail-1'],
      ['get', '/v1/operations/{ref}', '/v1/operations/no-such-ref'],
      ['get', '/v1/projects/{id}', '/v1/projects/no-such-project'],
      ['get', '/v1/projects', '/v1/projects?limit=0'],
      ['post', '/v1/operations', '/v1/operations', transfer('openapi-new-1', { unitId: 80_001 })],
      ['post', '/v1/operations', '/v1/operations', transfer('openapi-new-1', { unitId: 80_001 })],
      ['post', '/v1/operations', '/v1/operations', transfer('openapi-new-1', { unitId: 80_002 })],
      ['post', '/v1/operations', '/v1/operations', { operationType: 'Retire', transactionUnit: 'tonnes' }],
      ['post', '/v1/operations/{ref}/cancel', '/v1/operations/openapi-new-1/cancel', undefined],
      ['post', '/v1/operations/{ref}/retry', '/v1/operations/status-rej-1/retry', undefined],
      ['post', '/v1/sync/{resource}', '/v1/sync/everything', undefined],
    ];
    const seen = new Set<string>();
    for (const [method, docPath, url, body] of cases) {
      const res = await call(method.toUpperCase(), url, method === 'post' ? (body ?? {}) : undefined);
      seen.add(`${method} ${docPath} ${res.status}`);
      const schema = responseSchema(doc, method, docPath, res.status);
      expect(schemaProblems(res.json, schema, doc), `${method.toUpperCase()} ${url} → ${res.status}`).toEqual(
        [],
      );
    }
    // The cases reach the answers they are meant to: successes, the decision, and each refusal.
    expect([...seen]).toEqual(
      expect.arrayContaining([
        'get /v1/operations/{ref} 200',
        'get /v1/operations/{ref} 404',
        'get /v1/projects 400',
        'get /v1/schema 200',
        'get /v1/schema 400',
        'post /v1/operations 201',
        'post /v1/operations 200',
        'post /v1/operations 409',
        'post /v1/operations 422',
        'post /v1/operations/{ref}/cancel 200',
        'post /v1/operations/{ref}/retry 409',
        'post /v1/sync/{resource} 400',
      ]),
    );
    // The decided operation's state and reason are there to read.
    const rejected = (await call('GET', '/v1/operations/status-rej-1')).json;
    expect(rejected).toMatchObject({
      state: 'rejected',
      decisionReason: REJECTION_REASON,
      decision_reason: REJECTION_REASON,
    });
    // And the check is not blind: an undocumented field, a state outside the seven, a missing field.
    const entrySchema = responseSchema(doc, 'get', '/v1/operations/{ref}', 200);
    const { body: _body, ...noBody } = rejected;
    expect(schemaProblems({ ...rejected, extra: 1, state: 'sent' }, entrySchema, doc)).toEqual([
      expect.stringMatching(/^\$\.state: "sent" not in/),
      '$.extra: not documented',
    ]);
    expect(schemaProblems(noBody, entrySchema, doc)).toEqual(['$.body: required, missing']);
  });
});

describe('a client generated with openapi-typescript', () => {
  beforeAll(async () => {
    const gen = await runTool(
      [bin('openapi-typescript', 'openapi-typescript'), 'openapi.json', '-o', 'schema.ts'],
      work.dir,
    );
    expect(gen.code, gen.stderr).toBe(0);
    writeFileSync(path.join(work.dir, 'client.ts'), CLIENT);
    writeFileSync(path.join(work.dir, 'wrong.ts'), WRONG);
    writeFileSync(path.join(work.dir, 'package.json'), JSON.stringify(PACKAGE_JSON));
    const tsconfig = (files: string[]) => JSON.stringify({ ...TSCONFIG, files });
    writeFileSync(path.join(work.dir, 'tsconfig.json'), tsconfig(['client.ts']));
    writeFileSync(path.join(work.dir, 'tsconfig.wrong.json'), tsconfig(['wrong.ts']));
    // The app's dependencies: openapi-fetch, @types/node and TypeScript, as this project has them.
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(work.dir, 'node_modules'), 'dir');
  });

  it('type-checks a program that queues an operation and reads its decision', async () => {
    const tsc = await runTool([bin('typescript', 'tsc'), '-p', 'tsconfig.json'], work.dir);
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.code).toBe(0);
  });

  it('refuses, line by line, a program that misuses the types', async () => {
    const tsc = await runTool([bin('typescript', 'tsc'), '-p', 'tsconfig.wrong.json'], work.dir);
    expect(tsc.code).not.toBe(0);
    const lines = WRONG.split('\n');
    const expected = lines.flatMap((l, i) => (l.includes('// wrong:') ? [i + 1] : []));
    const failing = [
      ...new Set([...tsc.stdout.matchAll(/^wrong\.ts\((\d+),\d+\): error/gm)].map((m) => Number(m[1]))),
    ];
    expect(expected.length).toBe(8);
    expect(
      failing.sort((a, b) => a - b),
      tsc.stdout,
    ).toEqual(expected);
  });

  it('runs against the daemon: queues through the real dispatcher and reads the decisions the operator sent', async () => {
    const env = { ...TOOL_ENV, VCU_API: h.base, VCU_TOKEN: TOKEN };
    const refs = ['client-ok-1', 'client-rej-1'];
    h.sim.webhooks.setDecision('client-rej-1', 'reject', REJECTION_REASON);
    const dispatcher = createDispatcherComponent(h.ctx, sqliteDispatcher(h.ctx));
    await dispatcher.start();
    try {
      const queued = await runTool(['client.ts', 'queue', ...refs], work.dir, env);
      expect(queued.code, queued.stderr).toBe(0);
      const stored = JSON.parse(queued.stdout) as Array<{
        status: number;
        operation: Record<string, unknown>;
      }>;
      expect(stored.map((s) => s.status)).toEqual([201, 201]);
      for (const s of stored) {
        // Retire as the client spelled it, sent as wire_spelling says; marketplaceId from configuration.
        expect(s.operation.operationType).toBe('retire');
        expect((s.operation.body as Record<string, unknown>).marketplaceId).toBe('mkt-ops');
      }
      const state = (ref: string) =>
        (
          h.ctx.database.sqlite
            .prepare('SELECT state FROM outbox WHERE marketplaceTransactionRef = ?')
            .get(ref) as {
            state: string;
          }
        ).state;
      await until(
        'both decided',
        () => state('client-ok-1') === 'approved' && state('client-rej-1') === 'rejected',
      );
    } finally {
      await dispatcher.stop();
    }
    const read = await runTool(['client.ts', 'read', ...refs], work.dir, env);
    expect(read.code, read.stderr).toBe(0);
    expect(JSON.parse(read.stdout)).toEqual([
      { decided: true, state: 'approved', reason: null },
      { decided: true, state: 'rejected', reason: REJECTION_REASON },
    ]);
  });
});
