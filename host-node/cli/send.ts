/** `mesh send <node-id|name> <credits>`: a transfer from the running node's account (POST /transfer). */
import { formatAmount, formatCredits } from '../../core/encoding/amount.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, positional } from './command.ts';
import { credits, recipient } from './values.ts';

export const sendCommand = command({
  description: "Sends credits from the running node's account to another node, and prints the transaction's id.",
  options: clientOptions,
  positionals: {
    to: positional('to', 'the node to pay: its node id (64 lowercase hex characters) or a name it holds', recipient),
    amount: positional('credits', 'how much, in credits as a decimal (1.5; at most 18 decimal places)', credits),
  },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const { tx_id: txId } = await client.post<{ tx_id: string }>('/transfer', { to: args.to, amount: formatAmount(args.amount) });
    io.err(`sent ${formatCredits(args.amount)} credits to ${args.to}\n`);
    io.out(`${txId}\n`);
    return EXIT.done;
  },
});
