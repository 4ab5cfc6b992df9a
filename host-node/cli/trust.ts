/**
 * `mesh trust <node-id>`: makes another node an admin of this one (a TrustGrant on chain, POST
 * /trust): it may then deploy and kill jobs on this node by directed placement without a token,
 * within this node's capacity. `--withdraw` takes the trust back.
 */
import { toHex } from '../../core/encoding/hex.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, flag, positional } from './command.ts';
import { nodeId } from './values.ts';

export const trustCommand = command({
  description:
    "Grants the running node's admin trust to another node (a TrustGrant): it may deploy and kill jobs on this node by directed placement, without a capability token, within this node's capacity. Prints the transaction id.",
  options: { ...clientOptions, withdraw: flag('take the trust back instead') },
  positionals: { subject: positional('node-id', 'the node to trust: its 64 lowercase hex characters', nodeId) },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const subject = toHex(args.subject);
    const { tx_id: txId } = await client.post<{ tx_id: string }>('/trust', { node_id: subject, trusted: !options.withdraw });
    io.err(`${options.withdraw ? 'withdrawing admin trust from' : 'granting admin trust to'} ${subject}: in effect once the transaction is in a block\n`);
    io.out(`${txId}\n`);
    return EXIT.done;
  },
});
