/**
 * `mesh signals`: the signals the running node keeps (broadcasts and those addressed to it), from
 * GET /signals, or followed on /signals/stream; `--from` and `--to` filter them on the node.
 */
import { formatCredits, parseAmount } from '../../core/encoding/amount.ts';
import type { SignalObject } from '../../core/signal/types.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, flag, option, type Parser } from './command.ts';
import { untilInterrupted } from './stop-signal.ts';
import { nodeIdText } from './values.ts';

const addressee: Parser<string> = (text, name) => (text === 'broadcast' ? text : nodeIdText(text, name));

/** One signal for people: id, sender, addressee, nonce, capabilities, payload size, burn. */
export function formatSignal(signal: SignalObject): string {
  const to = signal.to === 'broadcast' ? 'broadcast' : signal.to.slice(0, 16);
  const capabilities = signal.capabilities.map((c) => `${c.name}=${c.version}`).join(',') || '-';
  const burn = signal.burn_proof === undefined ? '' : `  burn ${formatCredits(parseAmount(signal.burn_proof.amount))} credits`;
  return `${signal.id.slice(0, 16)}  ${signal.from.slice(0, 16)} → ${to}  nonce ${signal.nonce}  ${capabilities}  ${signal.payload_hex.length / 2} B${burn}\n`;
}

export const signalsCommand = command({
  description:
    'Prints the signals the running node keeps (broadcasts and those addressed to it; the last 100), oldest first: id, sender → addressee, nonce, capabilities, payload size and burn. With --follow, goes on with each new one until interrupted.',
  options: {
    ...clientOptions,
    from: option({ value: 'NODE_ID', description: 'only those this node sent', parse: nodeIdText }),
    to: option({ value: 'NODE_ID', description: 'only those addressed to this node id, or to "broadcast"', parse: addressee }),
    follow: flag('go on with new signals as they come, until interrupted', 'f'),
    json: flag('print each signal as a line of JSON'),
  },
  run: async ({ options }, io) => {
    const client = await NodeClient.find(options);
    const query = new URLSearchParams();
    if (options.from !== undefined) query.set('from', options.from);
    if (options.to !== undefined) query.set('to', options.to);
    const suffix = query.size === 0 ? '' : `?${query}`;
    const print = (signal: SignalObject): void => io.out(options.json ? `${JSON.stringify(signal)}\n` : formatSignal(signal));
    if (!options.follow) (await client.get<SignalObject[]>(`/signals${suffix}`)).forEach(print);
    // Position 0 replays every signal still kept, then the stream goes on: no gap between the two.
    else
      await untilInterrupted((signal) =>
        client.follow(`/signals/stream${suffix}`, (event) => print(JSON.parse(event.data) as SignalObject), { signal, lastEventId: '0' }),
      );
    return EXIT.done;
  },
});
