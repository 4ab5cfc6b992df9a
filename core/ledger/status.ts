/**
 * The ledger figures of GET /status (node-api.md §4) for one account, computed from the state:
 * amounts as decimal strings, as the API sends them.
 */
import { formatAmount, formatBalance } from '../encoding/amount.ts';
import { freeBalance, type LedgerState, lockedBond, weightOf } from './state.ts';

export interface LedgerStatus {
  balance: string;
  free: string;
  locked_bids: string;
  locked_channels: string;
  locked_bond: string;
  bond: string;
  weight: string;
  /** The earned-work score: credits earned as a host; weight is min(bond, work_earned). */
  work_earned: string;
  /** Unbonded but still locked (and slashable): '0' once released. */
  unbonding: string;
  /** The height from which `unbonding` is free; null when nothing is unbonding. */
  unbond_release_height: number | null;
  circulating_supply: string;
  burned_total: string;
}

/**
 * The figures for `id` at `height` (the tip). When the balance is not negative,
 * free + locked_channels + locked_bond + locked_bids = balance.
 */
export function ledgerStatus(state: LedgerState, id: Uint8Array, height: number): LedgerStatus {
  const account = state.account(id);
  const supply = state.supply();
  const unbonding = account.unbond_release > height ? account.unbonding : 0n;
  return {
    balance: formatBalance(account.balance),
    free: formatAmount(freeBalance(account, height)),
    locked_bids: formatAmount(account.locked_bids),
    locked_channels: formatAmount(account.locked_channels),
    locked_bond: formatAmount(lockedBond(account, height)),
    bond: formatAmount(account.bond),
    weight: formatAmount(weightOf(account)),
    work_earned: formatAmount(account.work_earned),
    unbonding: formatAmount(unbonding),
    unbond_release_height: unbonding > 0n ? account.unbond_release : null,
    circulating_supply: formatAmount(supply.emitted - supply.burned),
    burned_total: formatAmount(supply.burned),
  };
}
