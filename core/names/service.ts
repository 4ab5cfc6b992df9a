/**
 * What the /names routes ask of the node (docs/names.md); Names implements it.
 */

/** A live claim, as GET /names/:name answers it. */
export interface NameRecord {
  readonly name: string;
  readonly node_id: string;
  /** The first height at which anyone may claim the name (unless its holder renews it before). */
  readonly expires_at_height: number;
}

export interface NamesService {
  /**
   * Signs and pools a NameClaim of `name` for this node (a renewal when it holds the name). Throws
   * NameError 'taken' (409), LedgerRuleError 'insufficient-free-balance' (402).
   */
  claimName(name: string): Promise<{ name: string; tx_id: string }>;
  /** The live claim of `name`, or undefined. */
  resolveName(name: string): NameRecord | undefined;
  /** The live names of `owner` (this node when null), by name. */
  listNames(owner: Uint8Array | null): NameRecord[];
}
