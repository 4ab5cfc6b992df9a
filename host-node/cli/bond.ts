/**
 * `mesh bond <credits>` and `mesh unbond <credits>`: the running node's bond, which with its earned
 * work gives it weight as a block producer (POST /bond, /unbond; docs/ledger.md "Bonds").
 */
import { formatAmount, formatCredits, parseBalance } from '../../core/encoding/amount.ts';
import { UNBOND_DELAY_BLOCKS } from '../../core/ledger/params.ts';
import type { NodeStatus } from '../../core/node/ledger-service.ts';
import { clientOptions, NodeClient, NodeClientError } from './client.ts';
import { type Command, command, EXIT, positional } from './command.ts';
import { credits } from './values.ts';

const amount = positional('credits', 'how much, in credits as a decimal (1.5; at most 18 decimal places)', credits);

// What bounds each change, as /status names it: a bond comes out of the free balance, an unbond out of the bond.
const LIMIT = { '/bond': ['free', 'the free balance'], '/unbond': ['bond', 'the bond'] } as const;

/**
 * The node's refusal said in credits where it was about the amount (the node's own message counts
 * base units): the figure it ran into, read back from /status.
 */
async function inCredits(client: NodeClient, path: keyof typeof LIMIT, amount: bigint, refusal: NodeClientError): Promise<NodeClientError> {
  const [field, what] = LIMIT[path];
  const status = await client.get<NodeStatus>('/status').catch(() => null);
  if (status === null) return refusal;
  const limit = parseBalance(status[field]);
  if (amount <= limit) return refusal;
  return new NodeClientError(`${path.slice(1)} of ${formatCredits(amount)} credits refused: ${what} is ${formatCredits(limit)} credits`);
}

/** A command that posts `{amount}` to `path`, says `done(amount)` on stderr and prints the tx id. */
function stakeCommand(description: string, path: keyof typeof LIMIT, done: (credits: string) => string): Command {
  return command({
    description,
    options: clientOptions,
    positionals: { amount },
    run: async ({ options, args }, io) => {
      const client = await NodeClient.find(options);
      const { tx_id: txId } = await client.post<{ tx_id: string }>(path, { amount: formatAmount(args.amount) }).catch(async (error: unknown) => {
        throw error instanceof NodeClientError ? await inCredits(client, path, args.amount, error) : error;
      });
      io.err(`${done(formatCredits(args.amount))}\n`);
      io.out(`${txId}\n`);
      return EXIT.done;
    },
  });
}

export const bondCommand: Command = stakeCommand(
  "Locks credits of the running node's free balance into its bond, and prints the transaction's id. Weight is the smaller of the bond and the work earned as a host.",
  '/bond',
  (amount) => `bonding ${amount} credits`,
);

export const unbondCommand: Command = stakeCommand(
  `Moves credits out of the running node's bond, and prints the transaction's id. Weight drops at once; the credits stay locked ${UNBOND_DELAY_BLOCKS.toLocaleString('en')} blocks more.`,
  '/unbond',
  (amount) => `unbonding ${amount} credits: free ${UNBOND_DELAY_BLOCKS.toLocaleString('en')} blocks after it is in a block (mesh status shows when)`,
);
