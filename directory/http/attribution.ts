/**
 * The attribution block every body with records carries: what a listing means and does not mean,
 * the use rules of the spec (§1.2, §1.5), the dataset's date and its sources with their licences.
 */
import type { Dataset } from '../dataset.ts';
import type { SourceRef } from '../record.ts';

export interface Attribution {
  notice: string;
  use_rules: string[];
  dataset_date: string;
  sources: SourceRef[];
}

/** Spec §1.2: a listing is not proof, and copies keep attribution, dates and verification status. */
export const NOTICE =
  'Records list manufacturer entities found in public sources. A listing or a category is not proof of factory ' +
  'operation, current capability, capacity, consent or membership; inspect category_evidence before relying on a ' +
  'category. Keep attribution (sources), dates and verification status with any copied result.';

/** Spec §1.5. */
export const USE_RULES: readonly string[] = [
  'Respect removals: drop records that no longer appear here.',
  'Refresh exported records; do not serve stale copies as current.',
  'A contact address found here, role mailboxes included, is no authorization for unsolicited bulk messages.',
  "The rights of the original sources remain applicable to exported data (see each source's licence).",
];

/** The attribution of a loaded dataset. */
export function attributionOf(dataset: Pick<Dataset, 'generated' | 'sources'>): Attribution {
  return { notice: NOTICE, use_rules: [...USE_RULES], dataset_date: dataset.generated, sources: dataset.sources };
}
