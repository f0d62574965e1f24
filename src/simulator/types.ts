/**
 * Record shapes served by the simulator, with exactly the interface's field names and JSON types
 * (operator-interface.md 2.2-2.4). Type aliases (not interfaces) so they are assignable to
 * `JsonObject`, the shape the registry overlay stores: admin endpoints and the invalid-record
 * fault may put arbitrary JSON there.
 */

export type JsonObject = Record<string, unknown>;

export type ResourceName = 'projects' | 'issuances' | 'units';
export const RESOURCES: readonly ResourceName[] = ['projects', 'issuances', 'units'];

export function isResourceName(s: string): s is ResourceName {
  return (RESOURCES as readonly string[]).includes(s);
}

/** The field that identifies a record of each resource. */
export const ID_FIELD: Record<ResourceName, string> = {
  projects: 'projectID',
  issuances: 'issuanceId',
  units: 'unitsOperationID',
};

export type Project = {
  projectID: number;
  projectName: string;
  cobenefit: string[];
  projectDescription: string;
  projectTags: string;
  currentRegistry: string;
  originRegistry: string;
  originProjectID: string;
  projectStatus: string;
  ProjectStatusDate: string;
  projectStartDate: string;
  projectEndDate: string;
  projectProgram: string;
  projectSector: string;
  projectType: string;
  projectCountry: string;
  projectRegion: string;
  projectGeographicIdentifier: string;
  projectMethodologyName: string;
  projectMethodologyVersion: string;
  projectValidationBody: string;
  projectValidationDate: string;
  projectUnitMetric: string;
  isProjectCoveredByNDC: boolean;
  projectNDCInformation: string;
  totalEstimatedUnits: number;
  annualEstimatedUnits: number;
  projectDeveloper: string;
  projectLinkProvider: string;
  projectLinkPublicTrust: string;
  projectLinkRating: string;
  projectLinkMap: string;
};

export type Issuance = {
  issuanceId: string;
  issuanceProjectId: number;
  issuanceVerificationRound: number;
  issuanceVerificationBody: string;
  issuanceVerificationDate: string;
  issuanceVintageYear: number;
  issuanceCreditingStartDate: string;
  issuanceCreditingEndDate: string;
  issuanceBlockchainNetwork: string;
  issuanceAmount: number;
  issuanceDate: string;
  isCorsiaCompliant: boolean;
  issuanceLinkRegistry: string;
  issuanceLinkPublicTrust: string;
  issuanceLinkNftMarket: string;
};

export type UnitOperation = {
  unitsOperationID: string;
  unitsIssuanceID: string;
  unitsType: string;
  unitsMarketplace: string;
  unitsLinkMarketplace: string;
  unitsMarketplaceID: string;
  unitsStatus: string;
  unitsDate: string;
  unitsQuantity: number;
  unitsRetirementNotes: string;
  unitsAccountOriginID: number;
  unitsAccountDestinationID: number;
  unitsBlockchainNetwork: string;
  unitsLinkRegistry: string;
  unitsLinkNftMarket: string;
};
