/**
 * Node names on the chain (node-api.md Ledger rule 8, DESIGN §4; docs/names.md): a NameClaim burns
 * 1,000 credits and holds a name for the chain's `nameBlocks` (210,000) blocks; its holder may renew
 * it while it holds it (the new term runs from the old expiry), and once it lapses anyone may claim
 * it. Any node resolves a name from the state of the chain it holds.
 *
 * A name is live while a claim by another node would fail in the next block: its expiry is above
 * the next block's height. Resolution, listings and the `to` of transfers and messages use that
 * rule, so a name that resolves here is the one the next block honours.
 */
import type { Chain } from '../chain/chain.ts';
import type { OwnTransactions } from '../chain/own-transactions.ts';
import { toHex } from '../encoding/hex.ts';
import { LedgerRuleError } from '../ledger/apply.ts';
import { NAME_MAX_LENGTH } from '../ledger/params.ts';
import type { NameEntry } from '../ledger/state.ts';
import { NameError } from './errors.ts';
import type { NameRecord, NamesService } from './service.ts';

/** A name: 1 to 32 of a-z, 0-9 and hyphen (the ledger's rule). */
export const NAME_RULE = `1 to ${NAME_MAX_LENGTH} characters of a-z, 0-9 and hyphen`;
const NAME = new RegExp(`^[a-z0-9-]{1,${NAME_MAX_LENGTH}}$`);

/** Whether `text` is a name the ledger takes. */
export function isName(text: string): boolean {
  return NAME.test(text);
}

/** Where a transfer, message or request goes: a NodeId, or a name to resolve. */
export type Recipient = Uint8Array | string;

export interface NamesOptions {
  readonly key: { readonly publicKey: Uint8Array };
  readonly chain: Pick<Chain, 'state' | 'tip'>;
  readonly own: Pick<OwnTransactions, 'submit'>;
}

export class Names implements NamesService {
  readonly #o: NamesOptions;

  constructor(options: NamesOptions) {
    this.#o = options;
  }

  /**
   * Claims `name` for this node, or renews this node's claim: signs and pools a NameClaim; the claim
   * holds once a block takes it (the first claim in a block wins). Throws NameError 'taken' (409)
   * while another node holds it, LedgerRuleError 'insufficient-free-balance' (402) or 'bad-name'.
   */
  async claimName(name: string): Promise<{ name: string; tx_id: string }> {
    try {
      const tx = await this.#o.own.submit({ kind: 'NameClaim', name });
      return { name, tx_id: toHex(tx.id) };
    } catch (error) {
      // The ledger's rule, applied by the pool to the chain and to the claims already pooled.
      if (error instanceof LedgerRuleError && error.code === 'name-taken') throw new NameError('taken', error.message);
      throw error;
    }
  }

  /** The live claim of `name`, or undefined (never claimed, or lapsed). */
  resolveName(name: string): NameRecord | undefined {
    const entry = this.#live(name);
    return entry === undefined ? undefined : record(name, entry);
  }

  /** The live names of `owner` (this node when null), by name. */
  listNames(owner: Uint8Array | null): NameRecord[] {
    const next = this.#nextHeight();
    return this.#o.chain.state
      .namesOf(owner ?? this.#o.key.publicKey)
      .filter(([, entry]) => entry.expires > next)
      .map(([name, entry]) => record(name, entry));
  }

  #nextHeight(): number {
    return this.#o.chain.tip.height + 1;
  }

  #live(name: string): NameEntry | undefined {
    return liveName(this.#o.chain, name);
  }
}

/**
 * The NodeId a transfer or message to `to` goes to on `chain`: `to` itself, or the holder of the
 * live claim of the name `to`. NameError 'unknown' (404) for a name nobody holds.
 */
export function recipientNode(chain: Pick<Chain, 'state' | 'tip'>, to: Recipient): Uint8Array {
  if (typeof to !== 'string') return to;
  const entry = liveName(chain, to);
  if (entry === undefined) throw new NameError('unknown', `no node holds the name ${JSON.stringify(to)} on this node's chain (never claimed, or lapsed)`);
  return entry.owner;
}

function liveName(chain: Pick<Chain, 'state' | 'tip'>, name: string): NameEntry | undefined {
  const entry = chain.state.name(name);
  return entry !== undefined && entry.expires > chain.tip.height + 1 ? entry : undefined;
}

function record(name: string, entry: NameEntry): NameRecord {
  return { name, node_id: toHex(entry.owner), expires_at_height: entry.expires };
}

/** Name claims and lookups. */
export function namesService(): (components: NamesOptions) => Names {
  return (components) => new Names(components);
}
