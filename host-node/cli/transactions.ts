/**
 * `mesh transactions`: the transactions the running node tells of on /transactions/stream, as they
 * pass its checks or first appear in a block; with `--held`, first those its feed still holds. A
 * stream the node closes is opened again with `Last-Event-ID` (NodeClient.follow), and when the node
 * says events were lost meanwhile (`event: missed`, docs/node-api.md), the command says so on stderr.
 */
import type { TxStreamEvent } from '../../core/chain/tx-feed.ts';
import { formatCredits, parseBalance } from '../../core/encoding/amount.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, flag, option } from './command.ts';
import { untilInterrupted } from './stop-signal.ts';
import { integer } from './values.ts';

/** One transaction for people: id, kind, sender, amount in credits. */
export function formatTransaction(tx: TxStreamEvent): string {
  return `${tx.id.slice(0, 16)}  ${tx.kind}  ${tx.origin.slice(0, 16)}  ${formatCredits(parseBalance(tx.amount, 'amount'))} credits\n`;
}

export const transactionsCommand = command({
  description:
    'Prints the transactions the running node streams, as they pass its checks or first appear in a block, one a line: id, kind, sender and amount in credits, until interrupted. With --held, first those the node still holds (its last 1,024).',
  options: {
    ...clientOptions,
    held: flag('first the transactions the node still holds, then on'),
    count: option({ value: 'N', description: 'stop after N transactions', parse: integer(1) }),
    json: flag('print each transaction as a line of JSON, as the stream carries it'),
  },
  run: async ({ options }, io) => {
    const client = await NodeClient.find(options);
    let printed = 0;
    // Position 0 is before the node started: everything held, after a `missed` notice expected then.
    let expectMissed = options.held;
    await untilInterrupted((signal) =>
      client.follow(
        '/transactions/stream',
        (event) => {
          if (event.event === 'missed') {
            const { after, first_held: first } = JSON.parse(event.data) as { after: number; first_held: number | null };
            if (!expectMissed)
              io.err(
                `some transactions after position ${after} are no longer held by the node (the oldest held is ${first ?? 'none'}); GET /transactions/<node-id> lists the confirmed ones\n`,
              );
            expectMissed = false;
            return true;
          }
          expectMissed = false;
          io.out(options.json ? `${event.data}\n` : formatTransaction(JSON.parse(event.data) as TxStreamEvent));
          return options.count === undefined || ++printed < options.count;
        },
        { signal, ...(options.held && { lastEventId: '0' }) },
      ),
    );
    return EXIT.done;
  },
});
