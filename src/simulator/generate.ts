/**
 * Pure record generators: record i of a resource is a function of (seed, i) only, so the
 * registry can produce any record on demand, in any order, without storing it.
 *
 * Keys: every resource is ordered by a numeric key derived from its id. Base record i has key
 * START + STEP * i. The gaps (STEP > 1) leave room to insert records *between* existing ones,
 * which the `drift` fault needs to shift offsets the way a live upstream does.
 */
import { hash3, Rng } from './prng.js';
import type { Issuance, Project, ResourceName, UnitOperation } from './types.js';
import {
  CHAINS,
  COBENEFITS,
  COUNTRIES,
  DEVELOPERS,
  MARKETPLACES,
  METHODOLOGIES,
  NAME_WORDS,
  ORIGIN_REGISTRIES,
  PROJECT_STATUSES,
  UNIT_STATUSES,
  UNIT_TYPES,
  VALIDATION_BODIES,
} from './vocab.js';

export const KEY_STEP = 4;

/** How ids map to ordering keys for one resource. */
export interface KeySpec {
  baseKey(i: number): number;
  /** Base index whose key this is, or undefined when the key is not on a base slot. */
  baseIndex(key: number): number | undefined;
  /** Numeric key of an id as it appears in JSON (number or digit string); undefined if not numeric. */
  keyOfId(id: unknown): number | undefined;
  /** The id as the interface types it (projectID integer, the others strings). */
  idOfKey(key: number): number | string;
}

function numericKey(id: unknown): number | undefined {
  if (typeof id === 'number') return Number.isSafeInteger(id) && id >= 0 ? id : undefined;
  if (typeof id === 'string' && /^\d{1,15}$/.test(id)) return Number(id);
  return undefined;
}

function keySpec(start: number, asString: boolean): KeySpec {
  return {
    baseKey: (i) => start + KEY_STEP * i,
    baseIndex: (key) => {
      const d = key - start;
      return d >= 0 && d % KEY_STEP === 0 ? d / KEY_STEP : undefined;
    },
    keyOfId: numericKey,
    idOfKey: (key) => (asString ? String(key) : key),
  };
}

/** Units start at 10 digits so ids sort the same numerically and as strings up to ~2e9 records. */
export const KEY_SPECS: Record<ResourceName, KeySpec> = {
  projects: keySpec(1000, false),
  issuances: keySpec(100_000, true),
  units: keySpec(1_000_000_000, true),
};

/** What generators need besides the index: the seed and the base sizes (for references). */
export interface GenContext {
  seed: number;
  projects: number;
  issuances: number;
  units: number;
}

const SALT: Record<ResourceName, number> = { projects: 0x5052, issuances: 0x4953, units: 0x554e };
const DAY_MS = 86_400_000;
const EPOCH_2015 = Date.UTC(2015, 0, 1);

function rngFor(ctx: GenContext, resource: ResourceName, i: number): Rng {
  return new Rng(hash3(ctx.seed, SALT[resource], i));
}

const DAY_CACHE: string[] = [];

/** YYYY-MM-DD for a day count since 2015-01-01 (memoised: generation is on the hot path). */
export function isoDay(daysSince2015: number): string {
  const hit = DAY_CACHE[daysSince2015];
  if (hit !== undefined) return hit;
  const s = new Date(EPOCH_2015 + daysSince2015 * DAY_MS).toISOString().slice(0, 10);
  if (daysSince2015 >= 0 && daysSince2015 < 8000) DAY_CACHE[daysSince2015] = s;
  return s;
}

/** URL slugs precomputed once: string work per record adds up at a million records. */
const SLUG = new Map<string, string>(
  [...MARKETPLACES, ...CHAINS].map((v) => [v, v.replace(/ /g, '-').toLowerCase()]),
);
const slug = (v: string): string => SLUG.get(v) ?? v.toLowerCase();

function dayOfYear(year: number, rng: Rng): string {
  return isoDay(Math.floor((Date.UTC(year, 0, 1) - EPOCH_2015) / DAY_MS) + rng.int(0, 364));
}

export function generateProject(ctx: GenContext, i: number): Project {
  const r = rngFor(ctx, 'projects', i);
  const id = KEY_SPECS.projects.baseKey(i);
  const m = r.pick(METHODOLOGIES);
  const place = r.pick(COUNTRIES);
  const startYear = r.int(2008, 2020);
  const annual = r.int(5, 800) * 1000;
  const years = r.int(10, 30);
  const cobenefit = COBENEFITS.filter(() => r.chance(0.3));
  // Most listed projects are in a settled state; the rest cover the whole CAD Trust list.
  const status = r.chance(0.6) ? r.pick(['Listed', 'Registered'] as const) : r.pick(PROJECT_STATUSES);
  const name = `${r.pick(NAME_WORDS)} ${m.tag} Project ${id}`;
  const lat = (r.next() * 60 - 30).toFixed(4);
  const lon = (r.next() * 300 - 150).toFixed(4);
  return {
    projectID: id,
    projectName: name,
    cobenefit: cobenefit.length > 0 ? cobenefit : ['Community livelihoods'],
    projectDescription: `${m.type} activities in ${place.country} under ${m.name}.`,
    projectTags: `${m.tag}; ${m.program}`,
    currentRegistry: 'Operator Registry',
    originRegistry: r.pick(ORIGIN_REGISTRIES),
    originProjectID: `VCS${r.int(100, 4999)}`,
    projectStatus: status,
    ProjectStatusDate: dayOfYear(r.int(2015, 2025), r),
    projectStartDate: dayOfYear(startYear, r),
    projectEndDate: dayOfYear(startYear + years, r),
    projectProgram: m.program,
    projectSector: m.sector,
    projectType: m.type,
    projectCountry: place.country,
    projectRegion: r.pick(place.regions),
    projectGeographicIdentifier: `${lat},${lon}`,
    projectMethodologyName: m.name,
    projectMethodologyVersion: m.version,
    projectValidationBody: r.pick(VALIDATION_BODIES),
    projectValidationDate: dayOfYear(startYear + 1, r),
    projectUnitMetric: 'tCO2e',
    isProjectCoveredByNDC: r.chance(0.4),
    projectNDCInformation: r.chance(0.5) ? 'Corresponding adjustment not applied' : '',
    totalEstimatedUnits: annual * years,
    annualEstimatedUnits: annual,
    projectDeveloper: r.pick(DEVELOPERS),
    projectLinkProvider: `https://registry.example/projects/${id}`,
    projectLinkPublicTrust: `https://trust.example/projects/${id}`,
    projectLinkRating: `https://ratings.example/projects/${id}`,
    projectLinkMap: `https://maps.example/?q=${lat},${lon}`,
  };
}

export function generateIssuance(ctx: GenContext, i: number): Issuance {
  const r = rngFor(ctx, 'issuances', i);
  const id = String(KEY_SPECS.issuances.baseKey(i));
  // References a base project (may later be removed: dangling references are realistic).
  const project = KEY_SPECS.projects.baseKey(r.int(0, Math.max(0, ctx.projects - 1)));
  const vintage = r.int(2015, 2025);
  const chain = r.pick(CHAINS);
  return {
    issuanceId: id,
    issuanceProjectId: project,
    issuanceVerificationRound: r.int(1, 6),
    issuanceVerificationBody: r.pick(VALIDATION_BODIES),
    issuanceVerificationDate: dayOfYear(Math.min(vintage + 1, 2025), r),
    issuanceVintageYear: vintage,
    issuanceCreditingStartDate: `${vintage}-01-01`,
    issuanceCreditingEndDate: `${vintage}-12-31`,
    issuanceBlockchainNetwork: chain,
    issuanceAmount: r.int(1, 500) * 1000,
    issuanceDate: dayOfYear(Math.min(vintage + 1, 2025), r),
    isCorsiaCompliant: r.chance(0.25),
    issuanceLinkRegistry: `https://registry.example/issuances/${id}`,
    issuanceLinkPublicTrust: `https://trust.example/issuances/${id}`,
    issuanceLinkNftMarket: `https://nft.example/${slug(chain)}/issuances/${id}`,
  };
}

export function generateUnit(ctx: GenContext, i: number): UnitOperation {
  const r = rngFor(ctx, 'units', i);
  const id = String(KEY_SPECS.units.baseKey(i));
  const issuance = String(KEY_SPECS.issuances.baseKey(r.int(0, Math.max(0, ctx.issuances - 1))));
  const status = r.chance(0.5) ? 'Issued' : r.pick(UNIT_STATUSES);
  const market = r.pick(MARKETPLACES);
  const chain = r.pick(CHAINS);
  // An operation log: dates never go backwards as ids increase (spread over ~10 years).
  const day = Math.min(4000, 365 + Math.floor((i * 3650) / Math.max(1, ctx.units)));
  return {
    unitsOperationID: id,
    unitsIssuanceID: issuance,
    unitsType: r.pick(UNIT_TYPES),
    unitsMarketplace: market,
    unitsLinkMarketplace: `https://market.example/${slug(market)}/ops/${id}`,
    unitsMarketplaceID: `MKT-${r.int(1, 9)}`,
    unitsStatus: status,
    unitsDate: isoDay(day),
    unitsQuantity: r.chance(0.1) ? r.int(1, 999) + 0.5 : r.int(1, 5000),
    unitsRetirementNotes: status === 'Retired' ? `Retired on behalf of client ${r.int(1, 999)}` : '',
    unitsAccountOriginID: r.int(1, 50_000),
    unitsAccountDestinationID: r.int(1, 50_000),
    unitsBlockchainNetwork: chain,
    unitsLinkRegistry: `https://registry.example/units/${id}`,
    unitsLinkNftMarket: `https://nft.example/${slug(chain)}/units/${id}`,
  };
}

export const GENERATORS: Record<
  ResourceName,
  (ctx: GenContext, i: number) => Project | Issuance | UnitOperation
> = {
  projects: generateProject,
  issuances: generateIssuance,
  units: generateUnit,
};
