/** `mesh status`: the running node's status, readable, or as the node sent it with `--json`. */
import { formatCredits, parseBalance } from '../../core/encoding/amount.ts';
import type { NodeStatus } from '../../core/node/ledger-service.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, flag } from './command.ts';

/** When the unbonding credits are free: the height, and roughly the time at one block per interval. */
function releaseOf(status: NodeStatus): string {
  if (status.unbond_release_height === null) return '';
  const at =
    status.unbond_release_secs === null ? '' : ` (about ${new Date(status.unbond_release_secs * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC)`;
  return `, free at height ${status.unbond_release_height}${at}`;
}

/** The status as lines for people: amounts in credits. */
export function formatStatus(status: NodeStatus): string {
  const credits = (text: string): string => `${formatCredits(parseBalance(text))} credits`;
  const rows: [string, string][] = [
    ['node id', status.node_id],
    ['height', String(status.height)],
    ['balance', credits(status.balance)],
    ['  free', credits(status.free)],
    ['  in bids', credits(status.locked_bids)],
    ['  in channels', credits(status.locked_channels)],
    ['  in bond', credits(status.locked_bond)],
    ['bond', credits(status.bond)],
    ['weight', credits(status.weight)],
    ['work earned', credits(status.work_earned)],
    ['unbonding', `${credits(status.unbonding)}${releaseOf(status)}`],
    ['circulating', credits(status.circulating_supply)],
    ['burned', credits(status.burned_total)],
    ['production', status.production.state === 'halted' ? `halted: ${status.production.reason}` : status.production.state],
    ['reachability', status.relay_addresses.length > 0 ? `${status.reachability}, through ${status.relay_addresses.join(' ')}` : status.reachability],
  ];
  return rows.map(([name, value]) => `${name.padEnd(14)}${value}\n`).join('');
}

export const statusCommand = command({
  description:
    "Shows the running node's status: its node id, the chain's height, its balances in credits, its bond, weight and work earned, what it is unbonding and until when, the supply, and whether peers can reach it (public, private or unknown) with the relay addresses it announces.",
  options: { ...clientOptions, json: flag('print the answer of GET /status as it is (amounts in base units)') },
  run: async ({ options }, io) => {
    const client = await NodeClient.find(options);
    const status = await client.get<NodeStatus>('/status');
    io.out(options.json ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status));
    return EXIT.done;
  },
});
