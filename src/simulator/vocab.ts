/**
 * Realistic value lists for generated records. CAD Trust lists come from operator-interface.md
 * Part B; the rest are plausible registry values so a mirror looks like production data.
 */

export const PROJECT_STATUSES = [
  'Listed',
  'Validated',
  'Registered',
  'Approved',
  'Authorized',
  'Completed',
  'Inactive',
  'Withdrawn',
  'Rejected',
  'Transitioned',
  'De-registered',
] as const;

/** Part B unitStatus plus the operator's own `Issued`, which Part A shows. */
export const UNIT_STATUSES = [
  'Issued',
  'Held',
  'Retired',
  'Cancelled',
  'Expired',
  'Inactive',
  'Buffer',
  'Exported',
  'Rejected',
  'Pending Export',
] as const;

export const UNIT_TYPES = [
  'Reduction - nature',
  'Reduction - technical',
  'Removal - nature',
  'Removal - technical',
  'Avoidance',
  'Not Determined',
] as const;

export interface Methodology {
  name: string;
  version: string;
  sector: string;
  type: string;
  program: string;
  tag: string;
}

export const METHODOLOGIES: readonly Methodology[] = [
  {
    name: 'VM0007',
    version: '1.6',
    sector: 'Agriculture; forestry and fishing',
    type: 'Reduced Emissions from Deforestation and Degradation (REDD+)',
    program: 'NBS',
    tag: 'REDD+',
  },
  {
    name: 'VM0015',
    version: '1.1',
    sector: 'Agriculture; forestry and fishing',
    type: 'REDD+ - Avoided Unplanned Deforestation',
    program: 'NBS',
    tag: 'REDD+',
  },
  {
    name: 'VM0047',
    version: '1.0',
    sector: 'Agriculture; forestry and fishing',
    type: 'Afforestation, Reforestation and Revegetation',
    program: 'NBS',
    tag: 'ARR',
  },
  {
    name: 'VM0042',
    version: '2.0',
    sector: 'Agriculture; forestry and fishing',
    type: 'Improved Agricultural Land Management',
    program: 'NBS',
    tag: 'Soil carbon',
  },
  {
    name: 'AMS-III.D',
    version: '21.0',
    sector: 'Agriculture; forestry and fishing',
    type: 'Methane Recovery in Animal Manure Management',
    program: 'Agriculture',
    tag: 'Methane',
  },
  {
    name: 'ACM0002',
    version: '20.0',
    sector: 'Energy industries (renewable/non-renewable sources)',
    type: 'Grid-connected Renewable Electricity',
    program: 'Energy',
    tag: 'Renewables',
  },
  {
    name: 'AMS-I.D',
    version: '18.0',
    sector: 'Energy industries (renewable/non-renewable sources)',
    type: 'Small-scale Renewable Electricity',
    program: 'Energy',
    tag: 'Renewables',
  },
  {
    name: 'AMS-II.G',
    version: '13.0',
    sector: 'Energy demand',
    type: 'Efficient Cookstoves',
    program: 'Community',
    tag: 'Cookstoves',
  },
];

export const COUNTRIES: readonly { country: string; regions: readonly string[] }[] = [
  { country: 'Colombia', regions: ['Antioquia', 'Meta', 'Caquetá', 'Chocó'] },
  { country: 'Brazil', regions: ['Pará', 'Amazonas', 'Mato Grosso', 'Acre'] },
  { country: 'Peru', regions: ['Madre de Dios', 'Loreto', 'San Martín'] },
  { country: 'Kenya', regions: ['Rift Valley', 'Coast', 'Eastern'] },
  { country: 'Indonesia', regions: ['Central Kalimantan', 'Riau', 'Papua'] },
  { country: 'India', regions: ['Maharashtra', 'Tamil Nadu', 'Rajasthan'] },
  { country: 'Mexico', regions: ['Chiapas', 'Oaxaca', 'Yucatán'] },
  { country: 'Cambodia', regions: ['Mondulkiri', 'Koh Kong'] },
];

export const VALIDATION_BODIES = [
  'SCS Global Services',
  'Aster Global Environmental Solutions',
  'Bureau Veritas',
  'TÜV SÜD',
  'Det Norske Veritas (DNV)',
  'Ruby Canyon Environmental',
  'ICONTEC',
] as const;

export const COBENEFITS = [
  'Biodiversity',
  'Water quality',
  'Community livelihoods',
  'Gender equality',
  'Education',
  'Health',
  'Soil conservation',
] as const;

export const DEVELOPERS = [
  'Selva Viva S.A.S.',
  'GreenBridge Carbon Ltd',
  'Andes Forest Partners',
  'Kijani Climate Co.',
  'Borneo Peat Alliance',
  'SunGrid Renewables',
] as const;

export const NAME_WORDS = [
  'Rio Verde',
  'Cerro Azul',
  'Mata Viva',
  'Kasigau',
  'Katingan',
  'Sierra Norte',
  'Monte Alegre',
  'Bosque Nuboso',
  'Lago Escondido',
  'Tambopata',
] as const;

export const CHAINS = ['Polygon', 'Ethereum', 'Celo', 'Algorand'] as const;
export const ORIGIN_REGISTRIES = ['Verra', 'Gold Standard', 'Operator Registry', 'ACR'] as const;
export const MARKETPLACES = ['Sim Marketplace', 'Tropical Carbon Exchange', 'Open Offset Market'] as const;
