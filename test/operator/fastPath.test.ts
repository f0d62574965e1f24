import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type FieldType, RESOURCE_FIELDS, type ResourceName } from '../../src/operator/fields.js';
import {
  fastNormalize,
  issuanceSchema,
  normalizeRecord,
  projectSchema,
  unitOperationSchema,
} from '../../src/operator/schemas.js';

const ZOD = { projects: projectSchema, issuances: issuanceSchema, unit_operations: unitOperationSchema };

/** Values a field of each type may hold upstream: well-formed, loosely typed, and plain wrong. */
const anyValue = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.constantFrom(0, 1, -0, 2, 1.5, -7, 1e20, 2 ** 53, Number.MAX_SAFE_INTEGER),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom('', ' ', ' 12', '12 ', '12', '1.5', '1e3', 'true', 'false', 'x', '\u00a012'),
  fc.constantFrom(
    '2024-02-29',
    '2023-02-29',
    '2024-13-01',
    '2024-01-31T10:00:00Z',
    '2024-01-31 10:00',
    '31/01/2024',
  ),
  fc.string(),
  fc.array(fc.oneof(fc.string(), fc.integer()), { maxLength: 3 }),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.string(), { maxKeys: 1 }),
);

const goodValue: Record<FieldType, fc.Arbitrary<unknown>> = {
  id: fc.oneof(fc.integer({ min: 0 }), fc.stringMatching(/^[A-Za-z0-9-]{1,12}$/)),
  text: fc.oneof(fc.string(), fc.constant(null)),
  int: fc.oneof(fc.integer(), fc.constant(null)),
  number: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(null)),
  bool: fc.oneof(fc.boolean(), fc.constant(null)),
  date: fc.constantFrom('2024-02-29', '2021-07-01', '2024-01-31T10:00:00Z', null),
  textList: fc.oneof(fc.array(fc.string(), { maxLength: 3 }), fc.string(), fc.constant(null)),
};

function recordOf(resource: keyof typeof ZOD, pick: (type: FieldType) => fc.Arbitrary<unknown>) {
  const shape: Record<string, fc.Arbitrary<unknown>> = {};
  for (const field of RESOURCE_FIELDS[resource].fields) shape[field.name] = pick(field.type);
  return fc.record(shape, { requiredKeys: [] });
}

function zodValues(resource: ResourceName & keyof typeof ZOD, value: unknown) {
  const parsed = ZOD[resource].safeParse(value);
  if (!parsed.success) return null;
  const data = parsed.data as Record<string, unknown>;
  return RESOURCE_FIELDS[resource].fields.map((f) => data[f.name] ?? null);
}

describe('the compiled fast path of normalizeRecord', () => {
  for (const resource of Object.keys(ZOD) as (keyof typeof ZOD)[]) {
    it(`${resource}: whatever it accepts, zod accepts with the same values`, () => {
      fc.assert(
        fc.property(
          recordOf(resource, () => anyValue),
          (record) => {
            const fast = fastNormalize(resource, record);
            if (fast === null) return;
            const zod = zodValues(resource, record);
            expect(fast.values).toEqual(zod);
            const keyIndex = RESOURCE_FIELDS[resource].fields.findIndex(
              (f) => f.name === RESOURCE_FIELDS[resource].key,
            );
            expect(fast.key).toBe(String(zod?.[keyIndex]));
          },
        ),
        { numRuns: 3000 },
      );
    });

    it(`${resource}: it accepts every well-formed record (so the common case skips zod)`, () => {
      fc.assert(
        fc.property(
          recordOf(resource, (type) => goodValue[type]),
          goodValue.id,
          (record, key) => {
            const withKey = { ...record, [RESOURCE_FIELDS[resource].key]: key };
            const fast = fastNormalize(resource, withKey);
            expect(fast).not.toBeNull();
            expect(fast!.values).toEqual(zodValues(resource, withKey));
          },
        ),
        { numRuns: 1000 },
      );
    });
  }

  it('leaves what it cannot vouch for to zod, which normalizes it or names the field', () => {
    const loose = { unitsOperationID: ' 12 ', unitsQuantity: '5', unitsAccountOriginID: '3' };
    expect(fastNormalize('unit_operations', loose)).toBeNull();
    const normalized = normalizeRecord('unit_operations', loose);
    expect(normalized.ok && normalized.record.key).toBe('12');
    const bad = normalizeRecord('unit_operations', { unitsOperationID: 1, unitsDate: '2023-02-29' });
    expect(bad).toMatchObject({ ok: false, key: '1', reason: 'unitsDate: expected a date YYYY-MM-DD' });
  });
});
