/**
 * The programs test/api/openapi.test.ts writes beside a client generated from /openapi.json: what an
 * internal app would write. `CLIENT` queues operations and reads their decisions with
 * openapi-fetch over the generated `paths`, and holds compile-time checks of the generated types
 * (it must type-check). `WRONG` misuses the types, one mistake per line marked `// wrong:`; each
 * such line, and no other, must fail the type-check.
 */

export const TSCONFIG = {
  compilerOptions: {
    target: 'ES2023',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    lib: ['ES2023', 'DOM'],
    types: ['node'],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowImportingTsExtensions: true,
    verbatimModuleSyntax: true,
  },
};

/** package.json of the client's folder: ESM, as Node's type stripping runs it. */
export const PACKAGE_JSON = { type: 'module', private: true };

export const CLIENT = `import createClient from 'openapi-fetch';
import type { components, paths } from './schema.ts';

type Operation = components['schemas']['Operation'];
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

// The generated types are closed where the values are: these fail to compile if one turns into string.
const stateIsClosed: Equal<
  Operation['state'],
  'queued' | 'sending' | 'accepted' | 'approved' | 'rejected' | 'failed' | 'cancelled'
> = true;
const sentTypeIsClosed: Equal<Operation['operationType'], 'Tokenization' | 'Transfer' | 'retire' | 'Detokenization'> = true;
type Body = paths['/v1/operations']['post']['requestBody']['content']['application/json'];
const unitIsClosed: Equal<Body['transactionUnit'], 'tCO2e' | 'kgCO2e'> = true;
// Open on input: any spelling the daemon accepts.
const typeIsOpen: Equal<Body['operationType'], string> = true;
// A deprecated snake_case alias has its camelCase twin's type (docs/api.md "Field names").
const aliasIsTwin: Equal<Operation['decision_reason'], Operation['decisionReason']> = true;
const logAliasIsTwin: Equal<Operation['attempt_log'], Operation['attemptLog']> = true;
void [stateIsClosed, sentTypeIsClosed, unitIsClosed, typeIsOpen, aliasIsTwin, logAliasIsTwin];

const client = createClient<paths>({
  baseUrl: process.env.VCU_API,
  headers: { authorization: \`Bearer \${process.env.VCU_TOKEN}\` },
});

/** Queues a Retire of one tonne; marketplaceId is left to the daemon's configuration. */
async function queue(ref: string, unitId: number): Promise<{ status: number; operation: Operation }> {
  const { data, error, response } = await client.POST('/v1/operations', {
    body: {
      operationType: 'Retire',
      marketplaceTransactionRef: ref,
      unitId,
      issuanceId: 7,
      transactionAmount: 1,
      transactionUnit: 'tCO2e',
      transactionTimestamp: '2026-03-01T12:00:00Z',
      unitsRetirementNotes: 'offsetting 2025',
    },
  });
  if (error) throw new Error(\`\${response.status}: \${error.error}\`);
  return { status: response.status, operation: data };
}

type Decision =
  | { decided: true; state: 'approved' | 'rejected'; reason: string | null }
  | { decided: false; state: Operation['state'] };

/** The operator's decision on an operation, once it came. */
async function readDecision(ref: string): Promise<Decision> {
  const { data, error } = await client.GET('/v1/operations/{ref}', { params: { path: { ref } } });
  if (error) throw new Error(error.error);
  if (data.state === 'approved' || data.state === 'rejected')
    return { decided: true, state: data.state, reason: data.decisionReason };
  return { decided: false, state: data.state };
}

const [command, ...refs] = process.argv.slice(2);
const out: unknown[] = [];
for (const [i, ref] of refs.entries()) out.push(command === 'queue' ? await queue(ref, 90_000 + i) : await readDecision(ref));
process.stdout.write(JSON.stringify(out));
`;

export const WRONG = `import createClient from 'openapi-fetch';
import type { components, paths } from './schema.ts';

type Operation = components['schemas']['Operation'];
const client = createClient<paths>({ baseUrl: 'http://127.0.0.1:1' });

export const notAState: Operation['state'] = 'sent'; // wrong: state
export const notAUnit: paths['/v1/operations']['post']['requestBody']['content']['application/json']['transactionUnit'] = 'tonnes'; // wrong: unit
export async function calls(): Promise<void> {
  await client.POST('/v1/operations', {
    body: { operationType: 'Retire', transactionAmount: 1, transactionUnit: 'tCO2e', transactionTimestamp: 'x' }, // wrong: ref required
  });
  await client.GET('/v1/operation/{ref}', { params: { path: { ref: 'a' } } }); // wrong: path
  const { data } = await client.GET('/v1/operations/{ref}', { params: { path: { ref: 'a' } } });
  console.log(data?.reason); // wrong: field
  await client.POST('/v1/sync/{resource}', { params: { path: { resource: 'everything' } } }); // wrong: sync target
  const page = await client.GET('/v1/projects', { params: { query: { limit: '10' } } }); // wrong: limit
  console.log(page.data?.items[0]?.projectID.toFixed()); // wrong: key is text
}
`;
