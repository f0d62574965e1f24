import type { Config } from '../config/config.js';

/** The four operation kinds of the interface (part 1), by the name vcu-sync uses inside. */
export type OperationKind = 'tokenization' | 'transfer' | 'retire' | 'detokenization';

export const OPERATION_KINDS: readonly OperationKind[] = [
  'tokenization',
  'transfer',
  'retire',
  'detokenization',
];

/**
 * Every accepted input spelling, lowercased. The operator's public documentation also shows the
 * older names postTransfer and postRetirement, and both `retire` and `Retire`; callers may use any.
 */
const ALIASES: Readonly<Record<string, OperationKind>> = {
  tokenization: 'tokenization',
  transfer: 'transfer',
  posttransfer: 'transfer',
  retire: 'retire',
  retirement: 'retire',
  postretirement: 'retire',
  detokenization: 'detokenization',
};

/** The kind an input spelling names (any case, legacy names too), or undefined. */
export function parseOperationKind(input: string): OperationKind | undefined {
  return ALIASES[input.trim().toLowerCase()];
}

/**
 * The spelling sent to the operator. Part A shows `Tokenization`, `Transfer`, `Detokenization` but
 * spells the retirement `retire` in lowercase, and does not say whether the operator compares
 * case-sensitively; the defaults repeat exactly what the interface shows, and
 * `outbox.wire_spelling` changes them without a release once onboarding tells the real ones.
 */
export function wireSpelling(kind: OperationKind, config: Config): string {
  return config.outbox.wire_spelling[kind];
}
