/**
 * The properties the simulator checks as it runs. Each is named in the report with how often it
 * was checked and the first time it broke (simulated time, and the seed that reproduces it).
 */
import type { Chain } from '../chain/chain.ts';
import { parseAmount, parseBalance } from '../encoding/amount.ts';
import { decode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { accountCodec, type LedgerState, lockedBond, TABLE } from '../ledger/state.ts';
import { ledgerStatus } from '../ledger/status.ts';

export const INVARIANTS = [
  'supply-conservation',
  'no-negative-free-balance',
  'status-identity',
  'one-tip-after-heal',
  'no-confirmed-tx-lost',
  'no-job-settled-twice',
  'no-channel-paid-beyond-capacity',
  'no-equivocation-unslashed',
] as const;

export type InvariantName = (typeof INVARIANTS)[number];

export interface InvariantResult {
  readonly name: InvariantName;
  readonly checks: number;
  readonly held: boolean;
  /** The first break: simulated ms since the start, and what was wrong. */
  readonly broke: { readonly atMs: number; readonly seed: string; readonly detail: string } | null;
}

/**
 * Whether `producer`'s equivocation at `height` is punished on the chain whose tip state is `state`
 * at `tipHeight`: slashed for it, or slashed for another of its equivocations (`others`, the
 * heights) and left with no locked bond. A slash takes the whole bond, so evidence with nothing
 * left to take is neither relayed nor reported: one incident costs the bond once (docs/ledger.md
 * "Slashing"). A bond made after that slash is in reach again.
 */
export function equivocationPunished(state: LedgerState, tipHeight: number, producer: Uint8Array, height: number, others: readonly number[]): boolean {
  if (state.slashed(producer, height) !== undefined) return true;
  return lockedBond(state.account(producer), tipHeight + 1) === 0n && others.some((h) => state.slashed(producer, h) !== undefined);
}

export class Invariants {
  readonly #seed: string;
  readonly #checks = new Map<InvariantName, number>(INVARIANTS.map((name) => [name, 0]));
  readonly #broke = new Map<InvariantName, { atMs: number; seed: string; detail: string }>();
  /** Tips whose state was already checked: the same state gives the same answer. */
  readonly #stateChecked = new Set<string>();

  constructor(seed: string) {
    this.#seed = seed;
  }

  /** Counts one check of `name`; when `ok` is false, keeps the first break. */
  record(name: InvariantName, atMs: number, ok: boolean, detail: () => string): void {
    this.#checks.set(name, this.#checks.get(name)! + 1);
    if (!ok && !this.#broke.has(name)) this.#broke.set(name, { atMs, seed: this.#seed, detail: detail() });
  }

  /**
   * The ledger's own invariants on one chain's tip state: the accounts' balances add up to what
   * was emitted less what was burned; nobody's locks exceed their balance; and GET /status's
   * figures add up (free + locked_channels + locked_bond + locked_bids = balance).
   */
  checkState(chain: Chain, atMs: number): void {
    const tip = chain.tip;
    const key = toHex(tip.hash);
    if (this.#stateChecked.has(key)) return;
    this.#stateChecked.add(key);
    const state = chain.state;
    let sum = 0n;
    let negative: string | null = null;
    let identity: string | null = null;
    for (const [k, v] of state.entries()) {
      if (k[0] !== TABLE.account || k.length !== 33) continue;
      const account = decode(accountCodec, v);
      sum += account.balance;
      const id = k.subarray(1);
      const free =
        account.balance - account.locked_bids - account.locked_channels - account.bond - (account.unbond_release > tip.height ? account.unbonding : 0n);
      if (free < 0n && negative === null) negative = `${toHex(id)} at height ${tip.height}: free ${free}`;
      const s = ledgerStatus(state, id, tip.height);
      const balance = parseBalance(s.balance);
      const parts = parseAmount(s.free) + parseAmount(s.locked_channels) + parseAmount(s.locked_bond) + parseAmount(s.locked_bids);
      if (balance >= 0n && parts !== balance && identity === null) identity = `${toHex(id)} at height ${tip.height}: parts ${parts}, balance ${balance}`;
    }
    const supply = state.supply();
    this.record(
      'supply-conservation',
      atMs,
      sum === supply.emitted - supply.burned,
      () => `height ${tip.height}: balances ${sum}, emitted − burned ${supply.emitted - supply.burned}`,
    );
    this.record('no-negative-free-balance', atMs, negative === null, () => negative!);
    this.record('status-identity', atMs, identity === null, () => identity!);
  }

  results(): InvariantResult[] {
    return INVARIANTS.map((name) => {
      const broke = this.#broke.get(name) ?? null;
      return { name, checks: this.#checks.get(name)!, held: broke === null, broke };
    });
  }
}
