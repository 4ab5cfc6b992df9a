/**
 * `mesh blocks`: the running node's main chain, block by block, from /blocks/stream: the blocks
 * from a height up to the tip, or on as they come with `--follow`. A height printed again means the
 * chain reorganised: the blocks from it on replace those printed before (docs/node-api.md).
 */
import type { BlockEvent } from '../../core/ledger/block.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, flag, type Io, option } from './command.ts';
import { untilInterrupted } from './stop-signal.ts';
import { integer } from './values.ts';

/** Blocks shown before the tip when no height is given, as `tail` shows the last lines. */
const RECENT = 10;

/** One block for people: height, hash, time (UTC), producer, transactions. */
export function formatBlock(block: BlockEvent): string {
  const time = new Date(block.timestamp * 1000).toISOString().replace('.000Z', 'Z');
  return `${block.index}  ${block.hash.slice(0, 16)}  ${time}  ${block.miner.slice(0, 16)}  ${block.tx_count} tx${block.tx_count === 1 ? '' : 's'}\n`;
}

export const blocksCommand = command({
  description: `Prints the running node's main-chain blocks from a height (default: the last ${RECENT}) up to its tip, one a line: height, hash, time (UTC), producer and transaction count. With --follow, goes on with each new block until interrupted. A height printed again means the chain reorganised: the blocks from it on replace those printed before.`,
  options: {
    ...clientOptions,
    'from-height': option({ value: 'N', description: `the first height (blocks below a light node's oldest are skipped)`, parse: integer(0) }),
    follow: flag('go on with new blocks as they come, until interrupted', 'f'),
    count: option({ value: 'N', description: 'stop after N blocks', parse: integer(1) }),
    json: flag('print each block as a line of JSON, as the stream carries it'),
  },
  run: async ({ options }, io) => {
    const client = await NodeClient.find(options);
    const tip = (await client.get<{ height: number }>('/beacon')).height;
    const from = options['from-height'] ?? Math.max(0, tip - RECENT + 1);
    await untilInterrupted((signal) => printBlocks(client, io, { ...options, from, until: options.follow ? null : tip }, signal));
    return EXIT.done;
  },
});

/** Prints blocks from `from` until one at `until` (null: never), `count` were printed, or `signal` aborts. */
async function printBlocks(
  client: NodeClient,
  io: Io,
  options: { from: number; until: number | null; count: number | undefined; json: boolean },
  signal: AbortSignal,
): Promise<void> {
  if (options.until !== null && options.from > options.until) return;
  let printed = 0;
  let last = -1;
  await client.follow(
    `/blocks/stream?min_height=${options.from}`,
    (event) => {
      const block = JSON.parse(event.data) as BlockEvent;
      if (block.index <= last) io.err(`the chain reorganised: the blocks from ${block.index} on replace those printed before\n`);
      last = block.index;
      io.out(options.json ? `${event.data}\n` : formatBlock(block));
      return (options.count === undefined || ++printed < options.count) && (options.until === null || block.index < options.until);
    },
    { signal },
  );
}
