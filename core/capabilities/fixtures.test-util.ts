/**
 * Shared fixtures of the capability tests (not a test file: the name keeps it out of every test
 * glob): a host H and delegates A, B, C… with fixed keys, allowances, and chains signed in order.
 */
import { SigningKey } from '../crypto/ed25519.ts';
import type { CheckContext, Use } from './check.ts';
import { type Allowance, type Link, signLink, type Token } from './token.ts';

export const NETWORK = 'mesh-devnet';
/** The enforcing host and the nodes capabilities are delegated to. */
export const H: SigningKey = SigningKey.fromSeed(new Uint8Array(32).fill(0x48));
export const A: SigningKey = SigningKey.fromSeed(new Uint8Array(32).fill(0x41));
export const B: SigningKey = SigningKey.fromSeed(new Uint8Array(32).fill(0x42));
export const C: SigningKey = SigningKey.fromSeed(new Uint8Array(32).fill(0x43));
/** A key no host trusts. */
export const X: SigningKey = SigningKey.fromSeed(new Uint8Array(32).fill(0x58));

/** Keys 0x60, 0x61, …: enough for the longest chains. */
export const KEYS: readonly SigningKey[] = Array.from({ length: 12 }, (_, i) => SigningKey.fromSeed(new Uint8Array(32).fill(0x60 + i)));

/** The time every test checks at, and a window around it. */
export const NOW = 1_800_000_000;
export const WINDOW = { not_before: NOW - 3600, expiry: NOW + 3600 };

/** Everything: both commands, no bound. */
export const ALL: Allowance = { commands: ['deploy', 'kill'], cpu_cores: null, mem_mb: null, duration_secs: null, bid: null, images: null, nodes: null };

/** Bounded in every field, to H only. */
export const BOUNDED: Allowance = {
  commands: ['deploy', 'kill'],
  cpu_cores: 4,
  mem_mb: 1024,
  duration_secs: 3600,
  bid: 10n ** 18n,
  images: ['localhost/'],
  nodes: [H.publicKey],
};

let nonces = 0;
/** A fresh nonce per link. */
export function nonce(): Uint8Array {
  const n = new Uint8Array(16);
  new DataView(n.buffer).setUint32(12, ++nonces);
  return n;
}

/** A link from `issuer` to `audience`. */
export function link(
  issuer: SigningKey,
  audience: SigningKey,
  allows: Allowance = ALL,
  window: { not_before: number; expiry: number } = WINDOW,
): Promise<Link> {
  return signLink(issuer, NETWORK, { audience: audience.publicKey, allows, ...window, nonce: nonce() });
}

/** A chain through `keys` (the first the root), link i allowing `allows[i]` (default ALL). */
export async function chain(keys: readonly SigningKey[], allows: readonly Allowance[] = []): Promise<Link[]> {
  const out: Link[] = [];
  for (let i = 0; i + 1 < keys.length; i++) out.push(await link(keys[i]!, keys[i + 1]!, allows[i] ?? ALL));
  return out;
}

/** A deploy on H within BOUNDED. */
export const DEPLOY: Use = {
  command: 'deploy',
  host: H.publicKey,
  cpuCores: 2,
  memMb: 512,
  durationSecs: 60,
  bid: 10n ** 17n,
  image: 'localhost/busybox:test',
};

/** H checking a token that `presenter` holds, nothing revoked, at NOW. */
export function context(presenter: SigningKey, change: Partial<CheckContext> = {}): CheckContext {
  return { network: NETWORK, roots: [H.publicKey], presenter: presenter.publicKey, nowSecs: NOW, revoked: () => false, ...change };
}

/** The token with link `i` replaced. */
export function replaced(token: Token, i: number, link: Link): Link[] {
  return token.map((l, j) => (j === i ? link : l));
}
