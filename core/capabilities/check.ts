/**
 * Checking a capability token at the host that enforces it (docs/capabilities.md "The rules"): the
 * chain must start at a key the host trusts as a root, hang together link by link, carry valid
 * signatures, only narrow from link to link, be inside its window, be presented by its holder,
 * have no revoked link, and allow the use asked for. The first rule broken is the error.
 *
 * @example
 * await checkToken(decodeToken(grant), { command: 'deploy', host: self, cpuCores: 1, memMb: 64, durationSecs: 60, bid, image },
 *   { network, roots: [self, ...configuredRoots], presenter: peer, nowSecs, revoked: (i, id) => state.revoked(i, id) !== undefined });
 */

import { type SignedMessage, verifyBatch } from '../crypto/ed25519.ts';
import { formatCredits } from '../encoding/amount.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { MeshError } from '../errors.ts';
import { entryWithin, imageAllowed } from '../jobs/policy.ts';
import { CapabilityError } from './errors.ts';
import { type Allowance, CLOCK_SKEW_SECS, COMMANDS, type Link, linkIdOf, linkSigningBytes, MAX_LINKS, type Token, unsignedLinkBytes } from './token.ts';

/** What the presenter asks the enforcing host to do. */
export interface Use {
  readonly command: string;
  /** The enforcing host's NodeId (checked against `nodes`). */
  readonly host: Uint8Array;
  readonly cpuCores?: number;
  readonly memMb?: number;
  readonly durationSecs?: number;
  /** Base units. */
  readonly bid?: bigint;
  readonly image?: string;
}

/** What the enforcing host knows besides the token. */
export interface CheckContext {
  readonly network: string;
  /** The enforcing host's own key plus its configured --capability-root keys. */
  readonly roots: readonly Uint8Array[];
  /** The authenticated peer presenting the token. */
  readonly presenter: Uint8Array;
  readonly nowSecs: number;
  /** Whether `issuer` revoked the link of id `linkId` on chain (chain.state.revoked(...) !== undefined). */
  readonly revoked: (issuer: Uint8Array, linkId: Uint8Array) => boolean;
}

/** The time a chain is valid: the latest not_before to the earliest expiry, before the skew. */
export interface Window {
  readonly notBefore: number;
  readonly expiry: number;
}

const short = (id: Uint8Array): string => `${toHex(id).slice(0, 16)}…`;
const has = (set: readonly Uint8Array[], id: Uint8Array): boolean => set.some((x) => bytesEqual(x, id));

/** The window of the whole chain: inside every link's. */
export function chainWindow(token: Token): Window {
  let notBefore = 0;
  let expiry = Number.MAX_SAFE_INTEGER;
  for (const link of token) {
    notBefore = Math.max(notBefore, link.not_before);
    expiry = Math.min(expiry, link.expiry);
  }
  return { notBefore, expiry };
}

/** The numeric bounds, named as in the format. */
const NUMERIC = ['cpu_cores', 'mem_mb', 'duration_secs', 'bid'] as const;

/** A bound as a message shows it: the bid in credits, never base units. */
const shown = (name: (typeof NUMERIC)[number], value: number | bigint): string =>
  name === 'bid' ? `${formatCredits(value as bigint)} credits` : String(value);

/**
 * How `child` allows more than `parent`, or null when it only narrows: a command the parent does
 * not grant, a bound above the parent's or dropped where the parent has one, an image entry not
 * within one of the parent's, a host the parent does not name. A null in the parent bounds nothing.
 */
export function widening(parent: Allowance, child: Allowance): string | null {
  const extra = child.commands.find((c) => !parent.commands.includes(c));
  if (extra !== undefined) return `it grants the command ${JSON.stringify(extra)}, which its parent does not`;
  for (const name of NUMERIC) {
    const bound = parent[name];
    const own = child[name];
    if (bound === null) continue;
    if (own === null) return `it drops its parent's bound ${name} ≤ ${shown(name, bound)}`;
    if (own > bound) return `its ${name} ≤ ${shown(name, own)} is above its parent's ${shown(name, bound)}`;
  }
  if (parent.images !== null) {
    if (child.images === null) return 'it allows any image where its parent allows only some';
    const loose = child.images.find((entry) => !parent.images!.some((outer) => entryWithin(entry, outer)));
    if (loose !== undefined) return `its image entry ${JSON.stringify(loose)} is not within any of its parent's`;
  }
  if (parent.nodes !== null) {
    if (child.nodes === null) return 'it allows any host where its parent allows only some';
    const loose = child.nodes.find((n) => !has(parent.nodes!, n));
    if (loose !== undefined) return `it names the host ${short(loose)}, which its parent does not`;
  }
  return null;
}

/**
 * Why `allows` does not allow `use`, or null when it does. A deploy must state every resource it
 * asks for (cores, memory, duration, bid, image), so that no bound is passed by leaving it out.
 */
export function refusal(allows: Allowance, use: Use): string | null {
  if (!(COMMANDS as readonly string[]).includes(use.command)) return `${JSON.stringify(use.command)} is not a command a token can allow`;
  if (!allows.commands.includes(use.command)) return `the token does not allow ${use.command}`;
  if (use.command === 'deploy') {
    const missing = (['cpuCores', 'memMb', 'durationSecs', 'bid', 'image'] as const).filter((k) => use[k] === undefined);
    if (missing.length > 0) return `a deploy must state ${missing.join(', ')}`;
  }
  const asked = { cpu_cores: use.cpuCores, mem_mb: use.memMb, duration_secs: use.durationSecs, bid: use.bid };
  for (const name of NUMERIC) {
    const bound = allows[name];
    const value = asked[name];
    if (bound !== null && value !== undefined && value > bound) return `${name} ${shown(name, value)} is above the token's ${shown(name, bound)}`;
  }
  if (allows.images !== null && use.image !== undefined && !imageAllowed(use.image, allows.images)) {
    return `the image ${JSON.stringify(use.image)} is not one the token allows`;
  }
  if (allows.nodes !== null && !has(allows.nodes, use.host)) return `the token does not allow the host ${short(use.host)}`;
  return null;
}

/** The unsigned bytes of each link, computed once for the signatures and the ids. */
interface Prepared {
  readonly link: Link;
  readonly bytes: Uint8Array;
}

/** The token's links with their bytes, after its depth is checked: 'malformed' (no link, or a field outside the format), 'too-deep'. */
function prepare(token: Token): Prepared[] {
  if (token.length === 0) throw new CapabilityError('malformed', 'a token holds at least one link');
  if (token.length > MAX_LINKS) throw new CapabilityError('too-deep', `the token has ${token.length} links, more than the ${MAX_LINKS} a token may have`);
  return token.map((link, i) => {
    try {
      return { link, bytes: unsignedLinkBytes(link) };
    } catch (error) {
      if (error instanceof MeshError) throw new CapabilityError('malformed', `link ${i}: ${error.message}`);
      throw error;
    }
  });
}

/** The checks that need no host: alignment, signatures, narrowing, in that order. */
async function checkLinks(links: readonly Prepared[], network: string): Promise<void> {
  for (let i = 1; i < links.length; i++) {
    const parent = links[i - 1]!.link;
    const child = links[i]!.link;
    if (!bytesEqual(parent.audience, child.issuer)) {
      throw new CapabilityError('misaligned', `link ${i} is issued by ${short(child.issuer)}, not by ${short(parent.audience)}, the audience of link ${i - 1}`);
    }
  }
  const messages: SignedMessage[] = links.map(({ link, bytes }) => ({
    publicKey: link.issuer,
    message: linkSigningBytes(network, bytes),
    signature: link.sig,
  }));
  const verdicts = await verifyBatch(messages);
  const forged = verdicts.indexOf(false);
  if (forged >= 0)
    throw new CapabilityError('bad-signature', `the signature of link ${forged} does not verify under its issuer ${short(links[forged]!.link.issuer)}`);
  for (let i = 1; i < links.length; i++) {
    const why = widening(links[i - 1]!.link.allows, links[i]!.link.allows);
    if (why !== null) throw new CapabilityError('widened', `link ${i} widens link ${i - 1}: ${why}`);
  }
}

/**
 * Checks what a token is, wherever it is presented: its depth, that each link is issued by the
 * previous link's audience, every signature (on `network`), and that each link only narrows its
 * parent. Throws CapabilityError ('malformed', 'too-deep', 'misaligned', 'bad-signature', 'widened').
 */
export async function checkChain(token: Token, network: string): Promise<void> {
  await checkLinks(prepare(token), network);
}

/**
 * Checks that `token` lets `ctx.presenter` do `use` on the enforcing host, now. Resolves when it
 * does; throws CapabilityError naming the first rule broken, in this order: depth ('malformed',
 * 'too-deep'), 'untrusted' root, 'misaligned', 'bad-signature', 'widened', 'not-yet-valid',
 * 'expired', 'not-presenter', 'revoked', 'not-allowed'.
 */
export async function checkToken(token: Token, use: Use, ctx: CheckContext): Promise<void> {
  const links = prepare(token);
  const root = token[0]!;
  if (!has(ctx.roots, root.issuer)) {
    throw new CapabilityError('untrusted', `the token's root ${short(root.issuer)} is neither this host nor a configured root`);
  }
  await checkLinks(links, ctx.network);
  const { notBefore, expiry } = chainWindow(token);
  if (ctx.nowSecs < notBefore - CLOCK_SKEW_SECS) {
    throw new CapabilityError(
      'not-yet-valid',
      `the token is valid from ${notBefore}, ${notBefore - ctx.nowSecs} s from now (${CLOCK_SKEW_SECS} s of clock skew allowed)`,
    );
  }
  if (ctx.nowSecs > expiry + CLOCK_SKEW_SECS) {
    throw new CapabilityError('expired', `the token expired at ${expiry}, ${ctx.nowSecs - expiry} s ago (${CLOCK_SKEW_SECS} s of clock skew allowed)`);
  }
  const last = token[token.length - 1]!;
  if (!bytesEqual(last.audience, ctx.presenter)) {
    throw new CapabilityError('not-presenter', `the token is held by ${short(last.audience)}, not by ${short(ctx.presenter)}, who presents it`);
  }
  links.forEach(({ link, bytes }, i) => {
    if (ctx.revoked(link.issuer, linkIdOf(ctx.network, bytes, link.sig))) {
      throw new CapabilityError('revoked', `link ${i} was revoked on chain by its issuer ${short(link.issuer)}`);
    }
  });
  const why = refusal(last.allows, use);
  if (why !== null) throw new CapabilityError('not-allowed', why);
}
