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
  return {
    balance: formatBalance(account.balance),
    free: formatAmount(freeBalance(account, height)),
    locked_bids: formatAmount(account.locked_bids),
    locked_channels: formatAmount(account.locked_channels),
    locked_bond: formatAmount(lockedBond(account, height)),
    bond: formatAmount(account.bond),
    weight: formatAmount(weightOf(account)),
    circulating_supply: formatAmount(supply.emitted - supply.burned),
    burned_total: formatAmount(supply.burned),
  };
}
