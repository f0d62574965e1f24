/**
 * Sample notifications for the demo: a steady mix of the four operation kinds on a few units, with
 * made-up people (the demo's own data, never real). Refs starting `reject-` are rejected by the
 * simulator, so the demo shows a rejection too.
 */
export function demoOperation(n: number, marketplaceId: string, now: Date): Record<string, unknown> {
  const unitId = 1 + (n % 5);
  const base = {
    marketplaceId,
    unitId,
    issuanceId: 100000 + 4 * (n % 3),
    transactionTimestamp: now.toISOString(),
    marketplaceTransactionRef: `${n % 7 === 6 ? 'reject-' : ''}demo-${now.getTime().toString(36)}-${n}`,
  };
  switch (n % 4) {
    case 0:
      return {
        ...base,
        operationType: 'Tokenization',
        transactionAmount: 10 + (n % 9),
        transactionUnit: 'tCO2e',
      };
    case 1:
      return {
        ...base,
        operationType: 'transfer',
        transactionAmount: 2.5,
        transactionUnit: 'tCO2e',
        transactionUnitPrice: '14.20',
        originWallet: `0xdemo-origin-${n}`,
        originUserName: 'Demo Origin',
        originUserEmail: 'origin@demo.invalid',
        destinationWallet: `0xdemo-destination-${n}`,
        destinationUserName: 'Demo Destination',
        destinationUserEmail: 'destination@demo.invalid',
      };
    case 2:
      return {
        ...base,
        operationType: 'Retire',
        transactionAmount: 750,
        transactionUnit: 'kgCO2e',
        unitsRetirementNotes: 'Demo retirement on behalf of a customer',
      };
    default:
      return {
        ...base,
        operationType: 'Detokenization',
        transactionAmount: 3,
        transactionUnit: 'tCO2e',
        unitsAccountDestinationID: 4242,
      };
  }
}
