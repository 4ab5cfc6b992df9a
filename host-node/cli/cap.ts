/**
 * `mesh cap`: capability tokens from the command line (docs/cli.md, docs/capabilities.md). issue,
 * delegate and inspect work on the terminal alone: they sign with the data directory's identity
 * key, which never goes through the HTTP API, and need no running node. revoke asks the running
 * node to revoke a link it issued (POST /capabilities/revoke).
 */
import { join, resolve } from 'node:path';
import { JOB_LIMITS } from '../../core/api/input.ts';
import { chainWindow, checkChain, widening } from '../../core/capabilities/check.ts';
import { CapabilityError } from '../../core/capabilities/errors.ts';
import {
  type Allowance,
  COMMANDS,
  decodeToken,
  encodeToken,
  LINK_LIMITS,
  type Link,
  linkId,
  MAX_LINKS,
  signLink,
  type Token,
} from '../../core/capabilities/token.ts';
import type { SigningKey } from '../../core/crypto/ed25519.ts';
import { systemRandom } from '../../core/crypto/random.ts';
import { formatAmount, formatCredits } from '../../core/encoding/amount.ts';
import { bytesEqual } from '../../core/encoding/bytes.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { devnet, MAINNET } from '../../core/ledger/params.ts';
import { DataDirError, dataDirOption, IDENTITY_FILE, readIdentityFile } from '../data-dir.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, entry, flag, type Io, list, type OptionValues, option, type Parser, positional, UsageError } from './command.ts';
import { credits, integer, nodeId } from './values.ts';

// ---------------------------------------------------------------------------------------------
// Values

const encoder = new TextEncoder();

/** `deploy,kill`: commands a token can allow, comma-separated. */
const commandList: Parser<string[]> = (text, name) => {
  const words = text.split(',').map((w) => w.trim());
  const unknown = words.find((w) => !(COMMANDS as readonly string[]).includes(w));
  if (unknown !== undefined) throw new UsageError(`${name} takes commands from ${COMMANDS.join(', ')}, comma-separated, got ${JSON.stringify(unknown)}`);
  return [...new Set(words)];
};

/** An image reference prefix: `localhost/busybox` allows every reference starting with it. */
const imagePrefix: Parser<string> = (text, name) => {
  const bytes = encoder.encode(text).length;
  if (bytes > LINK_LIMITS.imageBytes || /[\s\p{Cc}]/u.test(text)) {
    throw new UsageError(`${name} takes an image reference prefix of at most ${LINK_LIMITS.imageBytes} bytes without spaces, got ${JSON.stringify(text)}`);
  }
  return text;
};

const UNIT_SECS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** A moment: unix seconds, or an ISO 8601 date-time (`2026-12-01T12:00:00Z`). */
const moment: Parser<number> = (text, name) => {
  if (/^[0-9]+$/.test(text) && Number.isSafeInteger(Number(text))) return Number(text);
  const ms = /^\d{4}-\d{2}-\d{2}/.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms) || ms < 0)
    throw new UsageError(`${name} takes unix seconds or an ISO 8601 date-time (2026-12-01T12:00:00Z), got ${JSON.stringify(text)}`);
  return Math.floor(ms / 1000);
};

/** When a link ends: a duration after it begins (`90s`, `30m`, `1h`, `7d`, `2w`), or a moment. */
type Until = { readonly after: number } | { readonly at: number };

const until: Parser<Until> = (text, name) => {
  const match = /^([0-9]+)([smhdw])$/.exec(text);
  if (match) {
    const secs = Number(match[1]) * UNIT_SECS[match[2]!]!;
    if (!Number.isSafeInteger(secs) || secs === 0) throw new UsageError(`${name} takes a duration above 0, got ${JSON.stringify(text)}`);
    return { after: secs };
  }
  try {
    return { at: moment(text, name) };
  } catch {
    throw new UsageError(`${name} takes a duration (90s, 30m, 1h, 7d, 2w) or a moment (unix seconds, or an ISO 8601 date-time), got ${JSON.stringify(text)}`);
  }
};

/** A token's text, decoded (a usage error when it is not one). */
const tokenArg: Parser<Token> = (text, name) => {
  try {
    return decodeToken(text);
  } catch (error) {
    if (error instanceof CapabilityError) throw new UsageError(`${name} is not a capability token: ${error.message}`);
    throw error;
  }
};

const range = ([min, max]: readonly [number, number]): Parser<number> => integer(min, max);

// ---------------------------------------------------------------------------------------------
// Options

const devnetFlag = flag('sign and check for the local development chain (as mesh node --devnet)');

/** What a link may bound; unset: no bound of its own (issue) or the parent's (delegate). */
const narrowing = {
  cpu: option({ value: 'N', description: `at most N CPU cores per job (${JOB_LIMITS.cpuCores.join(' to ')})`, parse: range(JOB_LIMITS.cpuCores) }),
  'mem-mb': option({ value: 'MB', description: `at most MB MiB of memory per job (${JOB_LIMITS.memMb.join(' to ')})`, parse: range(JOB_LIMITS.memMb) }),
  'duration-secs': option({
    value: 'S',
    description: `at most S seconds of running per job (${JOB_LIMITS.durationSecs.join(' to ')})`,
    parse: range(JOB_LIMITS.durationSecs),
  }),
  'max-bid': option({ value: 'CREDITS', description: 'at most this bid per job, in credits as a decimal', parse: credits }),
  image: list({
    value: 'IMAGE',
    description: `only images this entry allows, read as --allow-image reads it: a repository with any tag, a path ending in /, or * (at most ${LINK_LIMITS.images})`,
    parse: imagePrefix,
  }),
  node: list({ value: 'NODE-ID', description: `only on this host (at most ${LINK_LIMITS.nodes})`, parse: nodeId }),
  'not-before': option({ value: 'WHEN', description: 'valid from this moment: unix seconds or an ISO 8601 date-time (default: now)', parse: moment }),
};

type NarrowingValues = OptionValues<typeof narrowing>;

function checkCounts(values: NarrowingValues): void {
  if (values.image.length > LINK_LIMITS.images) throw new UsageError(`--image may be given at most ${LINK_LIMITS.images} times`);
  if (values.node.length > LINK_LIMITS.nodes) throw new UsageError(`--node may be given at most ${LINK_LIMITS.nodes} times`);
}

/** The allowance the options state, each unset field taken from `base`. */
function allowanceOf(values: NarrowingValues, commands: readonly string[] | undefined, base: Allowance): Allowance {
  return {
    commands: commands ?? base.commands,
    cpu_cores: values.cpu ?? base.cpu_cores,
    mem_mb: values['mem-mb'] ?? base.mem_mb,
    duration_secs: values['duration-secs'] ?? base.duration_secs,
    bid: values['max-bid'] ?? base.bid,
    images: values.image.length > 0 ? values.image : base.images,
    nodes: values.node.length > 0 ? values.node : base.nodes,
  };
}

const UNBOUNDED: Allowance = { commands: [], cpu_cores: null, mem_mb: null, duration_secs: null, bid: null, images: null, nodes: null };

function networkOf(devnetChain: boolean): string {
  return devnetChain ? devnet().network : MAINNET.network;
}

/** The identity key of the data directory `dir`. */
async function dataDirKey(dir: string): Promise<SigningKey> {
  const path = join(resolve(dir), IDENTITY_FILE);
  try {
    return await readIdentityFile(path);
  } catch (error) {
    if (error instanceof DataDirError && error.code === 'identity-missing') {
      throw new Error(`${resolve(dir)} has no identity (no ${IDENTITY_FILE}); start mesh node there once, or restore one`);
    }
    throw error;
  }
}

const nowSecs = (): number => Math.floor(Date.now() / 1000);

function windowOf(values: NarrowingValues, end: Until | undefined, fallbackExpiry: (notBefore: number) => number): { not_before: number; expiry: number } {
  const notBefore = values['not-before'] ?? nowSecs();
  const expiry = end === undefined ? fallbackExpiry(notBefore) : 'after' in end ? notBefore + end.after : end.at;
  if (expiry < notBefore)
    throw new UsageError(`--expires ${new Date(expiry * 1000).toISOString()} is before the link becomes valid (${new Date(notBefore * 1000).toISOString()})`);
  return { not_before: notBefore, expiry };
}

async function signWith(
  key: SigningKey,
  network: string,
  audience: Uint8Array,
  allows: Allowance,
  window: { not_before: number; expiry: number },
): Promise<Link> {
  return signLink(key, network, { audience, allows, ...window, nonce: systemRandom.bytes(LINK_LIMITS.nonceBytes) });
}

// ---------------------------------------------------------------------------------------------
// Showing tokens

const short = (id: Uint8Array): string => toHex(id);
const time = (secs: number): string => new Date(secs * 1000).toISOString().replace('.000Z', 'Z');
const bound = (value: number | null, unit: string): string => (value === null ? 'any' : `≤ ${value}${unit}`);

/** An allowance as a few lines for people: commands, resources, images, hosts. */
export function formatAllowance(a: Allowance): string[] {
  return [
    `commands  ${a.commands.length === 0 ? '(none)' : a.commands.join(', ')}`,
    `cpu ${bound(a.cpu_cores, ' cores')}, memory ${bound(a.mem_mb, ' MiB')}, duration ${bound(a.duration_secs, ' s')}, bid ${a.bid === null ? 'any' : `≤ ${formatCredits(a.bid)} credits`}`,
    `images    ${a.images === null ? 'any' : a.images.length === 0 ? '(none)' : a.images.join(', ')}`,
    `hosts     ${a.nodes === null ? 'any' : a.nodes.length === 0 ? '(none)' : a.nodes.map(short).join(', ')}`,
  ];
}

/** An allowance as JSON: amounts as decimal strings of base units, ids as hex. */
function allowanceJson(a: Allowance): Record<string, unknown> {
  return { ...a, bid: a.bid === null ? null : formatAmount(a.bid), nodes: a.nodes === null ? null : a.nodes.map(toHex) };
}

/** What `mesh cap inspect` shows: every link, the chain's effect, and whether it holds together on `network`. */
export async function describeToken(token: Token, network: string): Promise<{ text: string; json: unknown; problem: string | null }> {
  let problem: string | null = null;
  try {
    await checkChain(token, network);
  } catch (error) {
    if (!(error instanceof CapabilityError)) throw error;
    problem = `${error.code}: ${error.message}`;
  }
  const { notBefore, expiry } = chainWindow(token);
  const last = token[token.length - 1]!;
  const lines: string[] = [];
  token.forEach((l, i) => {
    lines.push(`link ${i}${i === 0 ? ' (root)' : ''}`, `  issuer    ${short(l.issuer)}`, `  audience  ${short(l.audience)}`);
    lines.push(...formatAllowance(l.allows).map((line) => `  ${line}`));
    lines.push(`  valid     ${time(l.not_before)} to ${time(l.expiry)}`, `  link id   ${toHex(linkId(network, l))}`);
  });
  lines.push('effective', `  holder    ${short(last.audience)}`, ...formatAllowance(last.allows).map((line) => `  ${line}`));
  lines.push(`  valid     ${time(notBefore)} to ${time(expiry)}${notBefore > expiry ? " (never: the links' windows do not meet)" : ''}`);
  lines.push(
    problem === null
      ? `chain     holds together on ${network}: aligned, signed, each link narrowing its parent`
      : `chain     INVALID on ${network}: ${problem}`,
  );
  const json = {
    network,
    links: token.map((l, i) => ({
      index: i,
      issuer: toHex(l.issuer),
      audience: toHex(l.audience),
      allows: allowanceJson(l.allows),
      not_before: l.not_before,
      expiry: l.expiry,
      nonce: toHex(l.nonce),
      link_id: toHex(linkId(network, l)),
    })),
    effective: { holder: toHex(last.audience), allows: allowanceJson(last.allows), not_before: notBefore, expiry },
    valid: problem === null,
    problem,
  };
  return { text: `${lines.join('\n')}\n`, json, problem };
}

/** One line to stderr about a new link: who may do what, until when. */
function said(io: Io, link: Link, network: string): void {
  io.err(
    `signed link ${toHex(linkId(network, link))} on ${network}: ${toHex(link.audience)} may ${link.allows.commands.join(', ')} until ${time(link.expiry)}\n`,
  );
}

// ---------------------------------------------------------------------------------------------
// Commands

const issueCommand = command({
  description:
    "Signs a root capability with the data directory's identity key (the host's own key: a token rooted there is accepted by that host) and prints the token. On the terminal only; no node needs to run.",
  options: {
    to: option({ value: 'NODE-ID', description: 'the node that receives it', parse: nodeId, required: true }),
    allow: option({ value: 'COMMANDS', description: `what it may do: ${COMMANDS.join(', ')} (comma-separated)`, parse: commandList, required: true }),
    ...narrowing,
    expires: option({ value: 'WHEN', description: 'a duration after it becomes valid (90s, 30m, 1h, 7d, 2w) or a moment', parse: until, shown: '1d' }),
    'data-dir': dataDirOption,
    devnet: devnetFlag,
  },
  run: async ({ options }, io) => {
    checkCounts(options);
    const key = await dataDirKey(options['data-dir']);
    const network = networkOf(options.devnet);
    const window = windowOf(options, options.expires, (notBefore) => notBefore + UNIT_SECS.d!);
    const link = await signWith(key, network, options.to, allowanceOf(options, options.allow, UNBOUNDED), window);
    said(io, link, network);
    io.out(`${encodeToken([link])}\n`);
    return EXIT.done;
  },
});

const delegateCommand = command({
  description:
    "Hands on a capability this data directory's key holds: appends a link to the token, signed with that key, that narrows it (an option left out keeps the token's bound), and prints the longer token.",
  options: {
    to: option({ value: 'NODE-ID', description: 'the node that receives it', parse: nodeId, required: true }),
    allow: option({ value: 'COMMANDS', description: "what it may do, among what the token allows (default: the token's)", parse: commandList }),
    ...narrowing,
    expires: option({
      value: 'WHEN',
      description: 'a duration after it becomes valid (90s, 30m, 1h, 7d, 2w) or a moment (default: when the token expires)',
      parse: until,
    }),
    'data-dir': dataDirOption,
    devnet: devnetFlag,
  },
  positionals: { token: positional('token', 'the token to delegate from (mcap1.…)', tokenArg) },
  run: async ({ options, args }, io) => {
    checkCounts(options);
    const token = args.token;
    const key = await dataDirKey(options['data-dir']);
    const network = networkOf(options.devnet);
    try {
      await checkChain(token, network);
    } catch (error) {
      if (error instanceof CapabilityError) throw new Error(`the token does not hold together on ${network}: ${error.message}`);
      throw error;
    }
    const last = token[token.length - 1]!;
    if (!bytesEqual(last.audience, key.publicKey)) {
      throw new Error(
        `the token is held by ${toHex(last.audience)}, not by this data directory's key ${toHex(key.publicKey)}: only its holder can delegate it`,
      );
    }
    if (token.length >= MAX_LINKS) throw new Error(`the token has ${token.length} links already, the most a token may have`);
    const allows = allowanceOf(options, options.allow, last.allows);
    const why = widening(last.allows, allows);
    if (why !== null) throw new Error(`the new link would widen the token: ${why}`);
    const window = windowOf(options, options.expires, () => chainWindow(token).expiry);
    const link = await signWith(key, network, options.to, allows, window);
    said(io, link, network);
    io.out(`${encodeToken([...token, link])}\n`);
    return EXIT.done;
  },
});

const inspectCommand = command({
  description:
    "Shows each link of a token (issuer, audience, what it allows, when, its id), the chain's effect, and whether it holds together: aligned, signed, each link narrowing its parent. Exit 1 when it does not. No node needs to run.",
  options: { json: flag('print it as JSON (bid in base units)'), devnet: devnetFlag },
  positionals: { token: positional('token', 'the token (mcap1.…)', tokenArg) },
  run: async ({ options, args }, io) => {
    const { text, json, problem } = await describeToken(args.token, networkOf(options.devnet));
    io.out(options.json ? `${JSON.stringify(json, null, 2)}\n` : text);
    return problem === null ? EXIT.done : EXIT.failed;
  },
});

const revokeCommand = command({
  description:
    'Asks the running node to revoke the link of the token it issued (POST /capabilities/revoke): a RevokeCapability on chain, after which no host accepts the token or any token through that link. Prints the transaction id.',
  options: {
    ...clientOptions,
    link: option({
      value: 'N',
      description: `which link (its index, from 0, as mesh cap inspect shows it) when the node issued several`,
      parse: integer(0, MAX_LINKS - 1),
    }),
    json: flag("print the node's answer as JSON"),
  },
  positionals: { token: positional('token', 'the token (mcap1.…)', tokenArg) },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const body = { token: encodeToken(args.token), ...(options.link !== undefined && { link: options.link }) };
    const answer = await client.post<{ token_id: string; tx_id: string }>('/capabilities/revoke', body);
    if (options.json) {
      io.out(`${JSON.stringify(answer)}\n`);
      return EXIT.done;
    }
    io.err(`revoking link ${answer.token_id}: in effect once the transaction is in a block\n`);
    io.out(`${answer.tx_id}\n`);
    return EXIT.done;
  },
});

export const capCommand = command({
  description: 'Capability tokens: signed, narrowing chains that let other nodes deploy and kill jobs on a host by directed placement.',
  commands: [
    entry('issue', "sign a root capability with this data directory's key", () => issueCommand),
    entry('delegate', 'hand on a capability this key holds, narrowed', () => delegateCommand),
    entry('inspect', 'show the links of a token and whether it holds together', () => inspectCommand),
    entry('revoke', 'revoke on chain a link the running node issued', () => revokeCommand),
  ],
});
