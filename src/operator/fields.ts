/**
 * The record fields of the operator's interface (sections 2.2-2.4), in one place.
 * The zod schemas, the mirror tables and the read API filters are all derived from these lists,
 * so a field added here shows up everywhere at once.
 */

/** How a field is typed in the interface, and so how it is checked and stored. */
export type FieldType = 'id' | 'text' | 'int' | 'number' | 'bool' | 'date' | 'textList';

export interface FieldDef {
  /** Column and JSON name, exactly as the interface spells it. */
  readonly name: string;
  readonly type: FieldType;
}

/** The resources the mirror keeps, named as the tables that hold them. */
export type ResourceName =
  | 'projects'
  | 'issuances'
  | 'unit_operations'
  | 'custody_projects'
  | 'custody_issuances'
  | 'custody_units';

const f = (name: string, type: FieldType): FieldDef => ({ name, type });

export const PROJECT_FIELDS: readonly FieldDef[] = [
  f('projectID', 'id'),
  f('projectName', 'text'),
  f('cobenefit', 'textList'),
  f('projectDescription', 'text'),
  f('projectTags', 'text'),
  f('currentRegistry', 'text'),
  f('originRegistry', 'text'),
  f('originProjectID', 'text'),
  f('projectStatus', 'text'),
  f('ProjectStatusDate', 'date'),
  f('projectStartDate', 'date'),
  f('projectEndDate', 'date'),
  f('projectProgram', 'text'),
  f('projectSector', 'text'),
  f('projectType', 'text'),
  f('projectCountry', 'text'),
  f('projectRegion', 'text'),
  f('projectGeographicIdentifier', 'text'),
  f('projectMethodologyName', 'text'),
  f('projectMethodologyVersion', 'text'),
  f('projectValidationBody', 'text'),
  // Not typed as a date in the interface, so any text is accepted.
  f('projectValidationDate', 'text'),
  f('projectUnitMetric', 'text'),
  f('isProjectCoveredByNDC', 'bool'),
  f('projectNDCInformation', 'text'),
  f('totalEstimatedUnits', 'number'),
  f('annualEstimatedUnits', 'number'),
  f('projectDeveloper', 'text'),
  f('projectLinkProvider', 'text'),
  f('projectLinkPublicTrust', 'text'),
  f('projectLinkRating', 'text'),
  f('projectLinkMap', 'text'),
];

export const ISSUANCE_FIELDS: readonly FieldDef[] = [
  f('issuanceId', 'id'),
  f('issuanceProjectId', 'int'),
  f('issuanceVerificationRound', 'int'),
  f('issuanceVerificationBody', 'text'),
  f('issuanceVerificationDate', 'date'),
  f('issuanceVintageYear', 'int'),
  f('issuanceCreditingStartDate', 'date'),
  f('issuanceCreditingEndDate', 'date'),
  f('issuanceBlockchainNetwork', 'text'),
  f('issuanceAmount', 'number'),
  f('issuanceDate', 'date'),
  f('isCorsiaCompliant', 'bool'),
  f('issuanceLinkRegistry', 'text'),
  f('issuanceLinkPublicTrust', 'text'),
  f('issuanceLinkNftMarket', 'text'),
];

export const UNIT_FIELDS: readonly FieldDef[] = [
  f('unitsOperationID', 'id'),
  f('unitsIssuanceID', 'text'),
  f('unitsType', 'text'),
  f('unitsMarketplace', 'text'),
  f('unitsLinkMarketplace', 'text'),
  f('unitsMarketplaceID', 'text'),
  f('unitsStatus', 'text'),
  f('unitsDate', 'date'),
  f('unitsQuantity', 'number'),
  f('unitsRetirementNotes', 'text'),
  f('unitsAccountOriginID', 'int'),
  f('unitsAccountDestinationID', 'int'),
  f('unitsBlockchainNetwork', 'text'),
  f('unitsLinkRegistry', 'text'),
  f('unitsLinkNftMarket', 'text'),
];

/**
 * Older field names from the operator's public documentation, mapped to the current ones so a record
 * that still uses them lands in the right column (the original stays in `_raw`).
 */
export const LEGACY_FIELD_NAMES: Readonly<Record<string, string>> = {
  projectLinkCADTrust: 'projectLinkPublicTrust',
  issuanceLinkCADTrust: 'issuanceLinkPublicTrust',
  issuanceLinkOpenSea: 'issuanceLinkNftMarket',
  unitsLinkOpenSea: 'unitsLinkNftMarket',
};

export interface ResourceFields {
  readonly fields: readonly FieldDef[];
  /** The field that identifies a record. */
  readonly key: string;
}

export const RESOURCE_FIELDS: Readonly<Record<ResourceName, ResourceFields>> = {
  projects: { fields: PROJECT_FIELDS, key: 'projectID' },
  issuances: { fields: ISSUANCE_FIELDS, key: 'issuanceId' },
  unit_operations: { fields: UNIT_FIELDS, key: 'unitsOperationID' },
  custody_projects: { fields: PROJECT_FIELDS, key: 'projectID' },
  custody_issuances: { fields: ISSUANCE_FIELDS, key: 'issuanceId' },
  custody_units: { fields: UNIT_FIELDS, key: 'unitsOperationID' },
};

/** The Notification's text fields (interface 2.1), besides the ones with their own rules. */
export const NOTIFICATION_STRING_FIELDS = [
  'marketplaceId',
  'transactionUnitPrice',
  'transactionDescription',
  'originWallet',
  'originUserName',
  'originUserEmail',
  'originUserDocId',
  'destinationWallet',
  'destinationUserName',
  'destinationUserEmail',
  'destinationUserDocId',
  'contractAddress',
  'transactionReferenceId',
  'transactionHash',
  'publicNetworkChainId',
  'publicNetworkName',
  'unitsRetirementNotes',
  'detokenizationProof',
] as const;

/** The Notification's integer fields (interface 2.1). */
export const NOTIFICATION_INTEGER_FIELDS = [
  'unitId',
  'issuanceId',
  'unitsInternalAccountID',
  'unitsAccountDestinationID',
] as const;
