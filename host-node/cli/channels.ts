/**
 * `mesh channel`: payment channels from the command line, over the running node's /channels routes
 * (docs/cli.md): open (on the payer), pay (sign a receipt, on the payer), close (on the host, with
 * a receipt or the best one it holds), expire (on the payer, after the expiry height) and ls.
 * Amounts are typed and shown in credits, never base units.
 */

import type { ChannelView, CloseAnswer, ExpireAnswer, ReceiptAnswer } from '../../core/channels/types.ts';
import { formatAmount, formatCredits, parseAmount } from '../../core/encoding/amount.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, entry, flag, option, type Parser, positional, UsageError } from './command.ts';
import { idPrefix, uniqueId } from './id-prefix.ts';
import { columns } from './table.ts';
import { credits, integer, nodeId } from './values.ts';

const json = flag("print the node's answer as JSON, as it is (amounts in base units)");

/** A channel named by its id or the start of it, as `mesh channel ls` shows it. */
const channelRef: Parser<string> = idPrefix('a channel id');

/** An amount in credits that may be 0 (a receipt's cumulative). */
const cumulative: Parser<bigint> = (text, name) => (text === '0' ? 0n : credits(text, name));

/** A payer's signature: 128 lowercase hex characters. */
const signature: Parser<string> = (text, name) => {
  if (!/^[0-9a-f]{128}$/.test(text))
    throw new UsageError(`${name} must be 128 lowercase hex characters (the payer's signature), got ${text.length} characters`);
  return text;
};

const inCredits = (amount: string): string => formatCredits(parseAmount(amount));

/** GET /channels as a table for people: id prefixes, amounts in credits, the other party. */
export function formatChannelList(channels: readonly ChannelView[]): string {
  const head = ['CHANNEL', 'ROLE', 'STATUS', 'CAPACITY', 'PAID', 'EXPIRY', 'WITH'];
  const rows = channels.map((c) => [
    c.channel_id.slice(0, 16),
    c.role,
    c.status,
    inCredits(c.capacity),
    inCredits(c.settlement?.cumulative ?? c.cumulative),
    String(c.expiry_height),
    (c.role === 'payer' ? c.host : c.payer).slice(0, 16),
  ]);
  return columns([head, ...rows]);
}

/** A close or expiry's division of the capacity, one line. */
function formatDivision(answer: CloseAnswer): string {
  return `${inCredits(answer.cumulative)} credits to the host (${inCredits(answer.to_host)} after the burn of ${inCredits(answer.burned)}), ${inCredits(answer.returned_to_payer)} back to the payer`;
}

/** The full id of the one channel whose id starts with `ref`; NodeClientError when none or several do. */
async function channelOf(client: NodeClient, ref: string): Promise<ChannelView> {
  const channels = await client.get<ChannelView[]>('/channels');
  const id = uniqueId(
    channels.map((c) => c.channel_id),
    ref,
    { none: 'this node is party to no channel', plural: 'channels' },
  );
  return channels.find((c) => c.channel_id === id)!;
}

const channelArg = { channel: positional('channel-id', 'the channel id, or its first characters as mesh channel ls shows them', channelRef) };

const openCommand = command({
  description: 'Opens a payment channel to a host: a ChannelOpen that locks the capacity until the host closes it or it expires. Prints the channel id.',
  options: {
    ...clientOptions,
    'expiry-height': option({
      value: 'N',
      description: 'the last height at which the host may close it (default: 1,440 blocks above the tip)',
      parse: integer(1),
    }),
    json,
  },
  positionals: {
    host: positional('host', 'the host node id (64 hex)', nodeId),
    capacity: positional('credits', 'the capacity, in credits as a decimal', credits),
  },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const body = {
      host: toHex(args.host),
      capacity: formatAmount(args.capacity),
      ...(options['expiry-height'] !== undefined && { expiry_height: options['expiry-height'] }),
    };
    const answer = await client.post<{ channel_id: string; expiry_height: number }>('/channels/open', body);
    if (options.json) io.out(`${JSON.stringify(answer)}\n`);
    else {
      io.out(`${answer.channel_id}\n`);
      io.err(
        `channel of ${formatCredits(args.capacity)} credits to ${toHex(args.host).slice(0, 16)}…, the host may close it up to height ${answer.expiry_height}\n`,
      );
    }
    return EXIT.done;
  },
});

const payCommand = command({
  description:
    'Signs a receipt for the cumulative total paid on a channel (no transaction) and hands it to the host. Prints the receipt; the host closes with it (mesh channel close), or with a higher one.',
  options: { ...clientOptions, json },
  positionals: {
    ...channelArg,
    cumulative: positional('cumulative-credits', 'the total paid so far on the channel, in credits (not an increment)', cumulative),
  },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const channel = await channelOf(client, args.channel);
    const answer = await client.post<ReceiptAnswer>('/channels/receipt', {
      channel_id: channel.channel_id,
      host: channel.host,
      cumulative: formatAmount(args.cumulative),
    });
    if (options.json) {
      io.out(`${JSON.stringify(answer, null, 2)}\n`);
      return EXIT.done;
    }
    io.out(`channel     ${answer.channel_id}\ncumulative  ${inCredits(answer.cumulative)}\npayer_sig   ${answer.payer_sig}\n`);
    io.err(
      answer.delivered
        ? 'the host holds it\n'
        : `not delivered: ${answer.delivery_error}; the node hands it over once it can, or give the host the receipt above\n`,
    );
    return EXIT.done;
  },
});

const closeCommand = command({
  description:
    'On the host: closes a channel with the best receipt it holds, or with the one given (kept only when it is better). The host gets the cumulative less the burn; the rest goes back to the payer.',
  options: {
    ...clientOptions,
    cumulative: option({ value: 'CREDITS', description: "a receipt's cumulative total, in credits (with --sig)", parse: cumulative }),
    sig: option({ value: 'HEX', description: "the payer's signature of that receipt (with --cumulative)", parse: signature }),
    json,
  },
  positionals: channelArg,
  run: async ({ options, args }, io) => {
    if ((options.cumulative === undefined) !== (options.sig === undefined)) throw new UsageError('--cumulative and --sig go together: a receipt is both');
    const client = await NodeClient.find(options);
    const { channel_id: id } = await channelOf(client, args.channel);
    const body = options.cumulative === undefined ? {} : { cumulative: formatAmount(options.cumulative), payer_sig: options.sig };
    const answer = await client.post<CloseAnswer>(`/channels/${id}/close`, body);
    if (options.json) io.out(`${JSON.stringify(answer, null, 2)}\n`);
    else {
      io.out(`${answer.tx_id}\n`);
      io.err(`closing: ${formatDivision(answer)}\n`);
    }
    return EXIT.done;
  },
});

const expireCommand = command({
  description:
    'On the payer: takes back the whole capacity of a channel its host did not close by the expiry height (ChannelExpire); prints its transaction id.',
  options: { ...clientOptions, json },
  positionals: channelArg,
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const { channel_id: id } = await channelOf(client, args.channel);
    const answer = await client.post<ExpireAnswer>(`/channels/${id}/expire`, {});
    if (options.json) io.out(`${JSON.stringify(answer, null, 2)}\n`);
    else {
      io.out(`${answer.tx_id}\n`);
      io.err(`expiring: ${inCredits(answer.returned_to_payer)} credits back to the payer\n`);
    }
    return EXIT.done;
  },
});

const lsCommand = command({
  description:
    'Lists the channels this node opened or hosts, newest first: id prefixes, amounts in credits (PAID: the highest receipt, or what the close paid).',
  options: { ...clientOptions, json },
  run: async ({ options }, io) => {
    const channels = await (await NodeClient.find(options)).get<ChannelView[]>('/channels');
    if (options.json) io.out(`${JSON.stringify(channels, null, 2)}\n`);
    else if (channels.length === 0) io.err('no channels\n');
    else io.out(formatChannelList(channels));
    return EXIT.done;
  },
});

export const channelCommand = command({
  description: 'Payment channels: pay a host by signed receipts, without a transaction per payment.',
  commands: [
    entry('open', 'open a channel to a host: mesh channel open <host> <credits>', () => openCommand),
    entry('pay', 'sign a receipt for the total paid: mesh channel pay <channel-id> <cumulative-credits>', () => payCommand),
    entry('close', 'on the host: close with the best receipt held (or the one given)', () => closeCommand),
    entry('expire', 'on the payer: take back a channel not closed by its expiry height', () => expireCommand),
    entry('ls', 'list the channels this node opened or hosts', () => lsCommand),
  ],
});
