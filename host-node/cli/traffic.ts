/** `mesh traffic`: the bytes the running node sent, by gossip topic and protocol (GET /traffic). */
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, flag } from './command.ts';
import { columns } from './table.ts';

/** GET /traffic as a table for people: each kind with its bytes and its share, the largest first, and the total. */
export function formatTraffic(sent: Readonly<Record<string, number>>): string {
  const total = Object.values(sent).reduce((sum, n) => sum + n, 0);
  const rows = Object.entries(sent)
    .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))
    .map(([kind, n]) => [kind, String(n), `${((100 * n) / Math.max(1, total)).toFixed(1)} %`]);
  return columns([['KIND', 'BYTES', 'SHARE'], ...rows, ['total', String(total), '100.0 %']]);
}

export const trafficCommand = command({
  description:
    "Prints the bytes the running node has sent since it started, by gossip topic, request protocol (rpc <name>), ping and gossipsub's own control frames: the kinds `mesh sim` counts.",
  options: { ...clientOptions, json: flag('print the answer of GET /traffic as it is') },
  run: async ({ options }, io) => {
    const answer = await (await NodeClient.find(options)).get<{ sent: Record<string, number> }>('/traffic');
    if (options.json) io.out(`${JSON.stringify(answer, null, 2)}\n`);
    else io.out(formatTraffic(answer.sent));
    return EXIT.done;
  },
});
