// Property tests of capability tokens: any token decodes back to itself from its text, a random
// chain in which every link narrows its parent passes the chain checks, and widening any single
// field of any one link is refused as 'widened' at that link. Runs on Node, Deno and Chromium.

import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../../test/harness.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { entryWithin } from '../jobs/policy.ts';
import { checkChain, checkToken } from './check.ts';
import { CapabilityError } from './errors.ts';
import { context, H, KEYS, NETWORK, NOW, nonce } from './fixtures.test-util.ts';
import { type Allowance, decodeToken, encodeToken, type Link, MAX_LINKS, signLink } from './token.ts';

const COMMAND_POOL = ['deploy', 'kill', 'exec', 'x'];
const IMAGE_POOL = ['localhost/', 'localhost/busybox', 'docker.io/', 'docker.io/library/alpine:3', 'ghcr.io/a/'];
const NODE_POOL: readonly Uint8Array[] = KEYS.slice(0, 6).map((k) => k.publicKey);
// Below each field's maximum, so that one more is still in the format.
const CPU_MAX = 1024;
const U32_BELOW = 2 ** 31;
const BID_MAX = 10n ** 24n;

const subsetOf = <T>(values: readonly T[]): fc.Arbitrary<T[]> => fc.subarray([...values]);

const allowanceArb: fc.Arbitrary<Allowance> = fc.record({
  commands: subsetOf(COMMAND_POOL),
  cpu_cores: fc.option(fc.integer({ min: 0, max: CPU_MAX }), { nil: null }),
  mem_mb: fc.option(fc.integer({ min: 0, max: U32_BELOW }), { nil: null }),
  duration_secs: fc.option(fc.integer({ min: 0, max: U32_BELOW }), { nil: null }),
  bid: fc.option(fc.bigInt({ min: 0n, max: BID_MAX }), { nil: null }),
  images: fc.option(subsetOf(IMAGE_POOL), { nil: null }),
  nodes: fc.option(subsetOf(NODE_POOL), { nil: null }),
});

const windowArb = fc
  .tuple(fc.integer({ min: 0, max: 2 ** 40 }), fc.integer({ min: 0, max: 2 ** 40 }))
  .map(([a, b]) => ({ not_before: Math.min(a, b), expiry: Math.max(a, b) }));

// ---------------------------------------------------------------------------------------------
// Narrowing, as choices fast-check makes: each field at most its parent's.

const fraction: fc.Arbitrary<number> = fc.integer({ min: 0, max: 1000 });

/** A bound no wider than `parent` (null parent: null or any), from the drawn fraction. */
function narrowNumber(parent: number | null, f: number, max: number): number | null {
  if (parent === null) return f % 3 === 0 ? null : Math.floor((max * f) / 1000);
  return Math.floor((parent * f) / 1000);
}

interface Draw {
  readonly keep: readonly boolean[];
  readonly fractions: readonly number[];
  readonly suffix: string;
}

const drawArb: fc.Arbitrary<Draw> = fc.record({
  keep: fc.array(fc.boolean(), { minLength: 16, maxLength: 16 }),
  fractions: fc.array(fraction, { minLength: 6, maxLength: 6 }),
  suffix: fc.constantFrom('', 'x', 'busybox', '1'),
});

/** An image entry within `entry`: itself, a repository under a path, or a tag of a repository. */
function within(entry: string, suffix: string): string {
  if (suffix === '' || entry === '*') return entry;
  if (entry.endsWith('/')) return `${entry}${suffix}`;
  return entry.includes(':') ? entry : `${entry}:${suffix}`;
}

/** A child of `parent` that only narrows it, picked by `d`. */
function narrow(parent: Allowance, d: Draw): Allowance {
  const f = d.fractions;
  const kept = <T>(values: readonly T[], offset: number): T[] => values.filter((_, i) => d.keep[(i + offset) % d.keep.length]);
  return {
    commands: kept(parent.commands, 0),
    cpu_cores: narrowNumber(parent.cpu_cores, f[0]!, CPU_MAX),
    mem_mb: narrowNumber(parent.mem_mb, f[1]!, U32_BELOW),
    duration_secs: narrowNumber(parent.duration_secs, f[2]!, U32_BELOW),
    bid: parent.bid === null ? (f[3]! % 3 === 0 ? null : (BID_MAX * BigInt(f[3]!)) / 1000n) : (parent.bid * BigInt(f[3]!)) / 1000n,
    // An entry may name less: a repository under a path, or one tag of a repository.
    images: parent.images === null ? (f[4]! % 3 === 0 ? null : kept(IMAGE_POOL, 4)) : kept(parent.images, 4).map((p) => within(p, d.suffix)),
    nodes: parent.nodes === null ? (f[5]! % 3 === 0 ? null : kept(NODE_POOL, 8)) : kept(parent.nodes, 8),
  };
}

/** Every way to widen `parent` in one field; the child is `base` (a narrowing of it) with that field changed. */
function widenings(parent: Allowance, base: Allowance): { field: string; child: Allowance }[] {
  const out: { field: string; child: Allowance }[] = [];
  const extraCommand = COMMAND_POOL.find((c) => !parent.commands.includes(c));
  if (extraCommand !== undefined) out.push({ field: 'commands', child: { ...base, commands: [...base.commands, extraCommand] } });
  for (const name of ['cpu_cores', 'mem_mb', 'duration_secs'] as const) {
    const bound = parent[name];
    if (bound !== null)
      out.push({ field: `${name} dropped`, child: { ...base, [name]: null } }, { field: `${name} + 1`, child: { ...base, [name]: bound + 1 } });
  }
  if (parent.bid !== null) out.push({ field: 'bid dropped', child: { ...base, bid: null } }, { field: 'bid + 1', child: { ...base, bid: parent.bid + 1n } });
  if (parent.images !== null) {
    out.push({ field: 'images dropped', child: { ...base, images: null } });
    const loose = ['zz/', 'localhost/busybox-x', ...IMAGE_POOL].find((p) => !parent.images!.some((q) => entryWithin(p, q)));
    if (loose !== undefined) out.push({ field: 'images + loose prefix', child: { ...base, images: [...(base.images ?? []), loose] } });
  }
  if (parent.nodes !== null) {
    out.push({ field: 'nodes dropped', child: { ...base, nodes: null } });
    const other = NODE_POOL.find((n) => !parent.nodes!.some((m) => bytesEqual(m, n)));
    if (other !== undefined) out.push({ field: 'nodes + another', child: { ...base, nodes: [...(base.nodes ?? []), other] } });
  }
  return out;
}

/** Signs a chain H → KEYS[0] → KEYS[1] … with `allows[i]` on link i. */
async function signChain(allows: readonly Allowance[]): Promise<Link[]> {
  const keys: SigningKey[] = [H, ...KEYS];
  const out: Link[] = [];
  for (let i = 0; i < allows.length; i++) {
    out.push(
      await signLink(keys[i]!, NETWORK, { audience: keys[i + 1]!.publicKey, allows: allows[i]!, not_before: NOW - 60, expiry: NOW + 60, nonce: nonce() }),
    );
  }
  return out;
}

test('capabilities property: any token round-trips through its text form', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.tuple(allowanceArb, windowArb), { minLength: 1, maxLength: 3 }), async (links) => {
      const keys: SigningKey[] = [H, ...KEYS];
      const token: Link[] = [];
      for (const [i, [allows, window]] of links.entries()) {
        token.push(await signLink(keys[i]!, NETWORK, { audience: keys[i + 1]!.publicKey, allows, ...window, nonce: nonce() }));
      }
      const text = encodeToken(token);
      assert.deepEqual(decodeToken(text), token);
      assert.equal(encodeToken(decodeToken(text)), text);
    }),
    { numRuns: 60 },
  );
});

test('capabilities property: a random narrowing chain passes; widening one field of one link is refused at that link', async () => {
  await fc.assert(
    fc.asyncProperty(allowanceArb, fc.array(drawArb, { minLength: 1, maxLength: MAX_LINKS - 1 }), fc.nat(), fc.nat(), async (root, draws, at, which) => {
      const allows: Allowance[] = [root];
      for (const d of draws) allows.push(narrow(allows[allows.length - 1]!, d));
      const token = await signChain(allows);
      await checkChain(token, NETWORK);
      const holder = KEYS[token.length - 1]!;
      // The whole check passes too, unless the use itself is beyond the last link.
      try {
        await checkToken(token, { command: 'kill', host: H.publicKey }, context(holder));
      } catch (error) {
        assert.instanceOf(error, CapabilityError);
        assert.equal((error as CapabilityError).code, 'not-allowed');
      }
      const i = 1 + (at % (allows.length - 1));
      const options = widenings(allows[i - 1]!, allows[i]!);
      fc.pre(options.length > 0);
      const { field, child } = options[which % options.length]!;
      const widened = await signChain(allows.map((a, j) => (j === i ? child : a)));
      let error: unknown;
      try {
        await checkToken(widened, { command: 'kill', host: H.publicKey }, context(holder));
      } catch (e) {
        error = e;
      }
      assert.instanceOf(error, CapabilityError, field);
      assert.equal((error as CapabilityError).code, 'widened', `${field}: ${(error as Error).message}`);
      assert.match((error as Error).message, new RegExp(`^link ${i} widens link ${i - 1}`), field);
    }),
    { numRuns: 60 },
  );
});
