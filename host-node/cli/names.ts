/**
 * `mesh names`: node names from the command line, over the running node's /names routes
 * (docs/cli.md, docs/names.md): claim (or renew) a name, resolve one, list a node's names.
 */

import { toHex } from '../../core/encoding/hex.ts';
import { isName, NAME_RULE } from '../../core/names/names.ts';
import type { NameRecord } from '../../core/names/service.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, entry, flag, option, type Parser, positional, UsageError } from './command.ts';
import { nodeId } from './values.ts';

const name: Parser<string> = (text, what) => {
  if (isName(text)) return text;
  throw new UsageError(`${what} must be a name: ${NAME_RULE}, got ${JSON.stringify(text)}`);
};

const json = flag("print the node's answer as JSON");
const nameArg = positional('name', `the name: ${NAME_RULE}`, name);

/** Names as lines for people: name, holder, the height from which anyone may claim it. */
export function formatNames(records: readonly NameRecord[]): string {
  return records.map((r) => `${r.name}  ${r.node_id}  until ${r.expires_at_height}\n`).join('');
}

const claimCommand = command({
  description:
    "Claims a name for this node, or renews it while the node holds it: 1,000 credits burned, held for 210,000 blocks (a renewal adds them to the current term). Prints the NameClaim's id; the claim holds once a block takes it (the first claim in a block wins): check with mesh names resolve.",
  options: { ...clientOptions, json },
  positionals: { name: nameArg },
  run: async ({ options, args }, io) => {
    const answer = await (await NodeClient.find(options)).post<{ name: string; tx_id: string }>('/names/claim', { name: args.name });
    if (options.json) io.out(`${JSON.stringify(answer)}\n`);
    else {
      io.err(`claim of ${answer.name} pooled; it holds once a block takes it\n`);
      io.out(`${answer.tx_id}\n`);
    }
    return EXIT.done;
  },
});

const resolveCommand = command({
  description: 'Prints the node id that holds a name on the chain the node holds (exit 1 when nobody does).',
  options: { ...clientOptions, json },
  positionals: { name: nameArg },
  run: async ({ options, args }, io) => {
    const found = await (await NodeClient.find(options)).get<NameRecord>(`/names/${args.name}`);
    io.out(options.json ? `${JSON.stringify(found)}\n` : `${found.node_id}\n`);
    return EXIT.done;
  },
});

const lsCommand = command({
  description: "Lists a node's live names (this node's by default): name, holder and the height from which anyone may claim it.",
  options: {
    ...clientOptions,
    owner: option({ value: 'NODE_ID', description: 'whose names (64 lowercase hex)', parse: nodeId }),
    json,
  },
  run: async ({ options }, io) => {
    const records = await (await NodeClient.find(options)).get<NameRecord[]>(options.owner === undefined ? '/names' : `/names?owner=${toHex(options.owner)}`);
    if (options.json) io.out(`${JSON.stringify(records, null, 2)}\n`);
    else if (records.length === 0) io.err('no names\n');
    else io.out(formatNames(records));
    return EXIT.done;
  },
});

export const namesCommand = command({
  description: "Node names on the chain: claim or renew one, resolve one, list a node's.",
  commands: [
    entry('claim', 'claim or renew a name for this node (1,000 credits burned)', () => claimCommand),
    entry('resolve', 'print the node id that holds a name', () => resolveCommand),
    entry('ls', "list a node's names", () => lsCommand),
  ],
});
