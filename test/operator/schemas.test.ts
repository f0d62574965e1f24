import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RESOURCE_FIELDS } from '../../src/operator/fields.js';
import { normalizeRecord } from '../../src/operator/schemas.js';

const project = {
  projectID: 12,
  projectName: 'Mata Atlântica REDD+',
  cobenefit: ['Biodiversity', 'Water'],
  projectStatus: 'Registered',
  ProjectStatusDate: '2024-02-29',
  isProjectCoveredByNDC: true,
  totalEstimatedUnits: 125000.5,
  projectValidationDate: 'Q3 2023',
  someFutureField: { nested: true },
};

function column(resource: 'projects' | 'unit_operations', values: unknown[], name: string) {
  return values[RESOURCE_FIELDS[resource].fields.findIndex((f) => f.name === name)];
}

describe('normalizeRecord', () => {
  it('turns a project into column values, the key as text, unknown fields kept in raw', () => {
    const result = normalizeRecord('projects', project);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.record.key).toBe('12');
    expect(column('projects', result.record.values, 'cobenefit')).toBe('["Biodiversity","Water"]');
    expect(column('projects', result.record.values, 'isProjectCoveredByNDC')).toBe(1);
    expect(column('projects', result.record.values, 'projectEndDate')).toBeNull();
    expect(JSON.parse(result.record.raw).someFutureField).toEqual({ nested: true });
  });

  it('treats 12 and "12" as the same key', () => {
    const a = normalizeRecord('projects', { projectID: 12 });
    const b = normalizeRecord('projects', { projectID: '12' });
    expect(a.ok && b.ok && a.record.key === b.record.key).toBe(true);
  });

  it('accepts unknown enumeration values as data', () => {
    const result = normalizeRecord('unit_operations', {
      unitsOperationID: 'u1',
      unitsStatus: 'Pending Export v2',
      unitsType: 'Removal - ocean',
    });
    expect(result.ok).toBe(true);
  });

  it('maps legacy link names onto the current columns', () => {
    const result = normalizeRecord('unit_operations', {
      unitsOperationID: 'u1',
      unitsLinkOpenSea: 'https://nft.example/1',
    });
    expect(result.ok && column('unit_operations', result.record.values, 'unitsLinkNftMarket')).toBe(
      'https://nft.example/1',
    );
  });

  it('reports the field and the reason of a record that cannot be read', () => {
    expect(normalizeRecord('projects', { projectID: 'abc', ProjectStatusDate: '2024-02-30' })).toMatchObject({
      ok: false,
      key: 'abc',
      reason: 'ProjectStatusDate: expected a date YYYY-MM-DD',
    });
    expect(
      normalizeRecord('unit_operations', { unitsOperationID: 'u9', unitsQuantity: 'lots' }),
    ).toMatchObject({
      ok: false,
      key: 'u9',
      reason: expect.stringMatching(/^unitsQuantity: /),
    });
    expect(normalizeRecord('projects', { projectName: 'no key' })).toMatchObject({
      ok: false,
      key: null,
      reason: expect.stringMatching(/^projectID/),
    });
    expect(normalizeRecord('projects', [1, 2])).toMatchObject({
      ok: false,
      reason: 'record is not a JSON object',
    });
  });

  it('never throws and always answers ok or a reason, whatever the input', () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        const result = normalizeRecord('issuances', value);
        return result.ok ? typeof result.record.key === 'string' : result.reason.length > 0;
      }),
      { numRuns: 300 },
    );
  });
});
