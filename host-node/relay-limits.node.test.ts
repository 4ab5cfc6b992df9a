/**
 * Relay reservation exhaustion against a real relay server on loopback, with RESERVE requests
 * written by hand on the hop protocol: the store is bounded (RESERVATION_REFUSED past
 * maxReservations), one address holds at most reservationsPerIp (PERMISSION_DENIED), and a peer
 * that keeps asking is refused, penalised, and at last banned (docs/network.md, "Through NATs").
 */
import { lpStream } from '@libp2p/utils';
import { assert } from 'chai';
import { SigningKey } from '../core/crypto/ed25519.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { RELAY_HOP_PROTOCOL } from '../core/net/relay-keeper.ts';
import type { RelayLimits } from '../core/net/relay-limits.ts';
import { test } from '../test/harness.ts';
import { startP2PNetwork } from './p2p.ts';

/** circuit v2's Status codes (pb/index.proto). */
const STATUS = { ok: 100, reservationRefused: 200, permissionDenied: 202 } as const;
/** HopMessage { type: RESERVE }: field 1, varint 0. */
const RESERVE = Uint8Array.of(0x08, 0x00);

const start = (options: { relay?: Partial<RelayLimits>; log?: (line: string) => void } = {}): Promise<Libp2pNetwork> =>
  startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [], ...options });

/** Reads a varint at `at`: its value and where the next field starts. */
function varint(bytes: Uint8Array, at: number): [number, number] {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[at++]!;
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [value, at];
    shift += 7;
  }
}

/** The `status` (field 5) of a HopMessage. */
function statusOf(message: Uint8Array): number | undefined {
  let at = 0;
  while (at < message.length) {
    const [tag, next] = varint(message, at);
    at = next;
    const [value, after] = varint(message, at);
    if (tag === 5 << 3) return value;
    at = (tag & 7) === 2 ? after + value : after;
  }
  return undefined;
}

/** One RESERVE from `client` to `relay`, and the status it was answered with. */
async function reserve(client: Libp2pNetwork, relay: Libp2pNetwork): Promise<number | undefined> {
  const stream = await client.libp2p.dialProtocol(relay.libp2p.getMultiaddrs()[0]!, RELAY_HOP_PROTOCOL);
  const lp = lpStream(stream);
  await lp.write(RESERVE);
  const answer = (await lp.read()).subarray();
  await stream.close().catch(() => {});
  return statusOf(answer);
}

test('relay: reservations past maxReservations are refused by the store', async () => {
  const relay = await start({ relay: { maxReservations: 2 } });
  const clients = await Promise.all([start(), start(), start()]);
  try {
    assert.deepEqual(
      [await reserve(clients[0]!, relay), await reserve(clients[1]!, relay), await reserve(clients[2]!, relay)],
      [STATUS.ok, STATUS.ok, STATUS.reservationRefused],
    );
    // A slot is freed when its holder hangs up, and taken by the next.
    await clients[0]!.stop();
    await until(
      'the slot is free',
      () => (relay.libp2p.services as unknown as { relay: { reservations: Map<unknown, unknown> } }).relay.reservations.size === 1,
    );
    assert.equal(await reserve(clients[2]!, relay), STATUS.ok);
  } finally {
    await Promise.all([relay, ...clients].map((n) => n.stop()));
  }
});

test('relay: one address holds at most reservationsPerIp; a peer that keeps asking is refused, penalised and banned', async () => {
  const log: string[] = [];
  const relay = await start({ relay: { reservationsPerIp: 2, requestsPerPeer: 3 }, log: (line) => log.push(line) });
  const clients = await Promise.all([start(), start(), start()]);
  const [first, second, third] = clients as [Libp2pNetwork, Libp2pNetwork, Libp2pNetwork];
  try {
    assert.equal(await reserve(first, relay), STATUS.ok);
    assert.equal(await reserve(second, relay), STATUS.ok);
    // Every client is on 127.0.0.1: the third is over the address's share, without blame.
    assert.equal(await reserve(third, relay), STATUS.permissionDenied);
    assert.isTrue(log.some((l) => /refusing a relay reservation of .* \(reservations-per-ip: 2 held from 127\.0\.0\.1\)/.test(l)));
    // Renewals are fine up to requestsPerPeer; each one past it is refused and costs 2 points.
    assert.equal(await reserve(first, relay), STATUS.ok);
    assert.equal(await reserve(first, relay), STATUS.ok);
    const refused: (number | undefined)[] = [];
    for (let i = 0; i < 5; i++) refused.push(await reserve(first, relay).catch(() => undefined));
    assert.equal(refused[0], STATUS.permissionDenied);
    await until('the flooding peer is banned', () => log.some((l) => /banning .* \(reservation-flood: /.test(l)));
    await until('and hung up on', () => relay.libp2p.getConnections(first.libp2p.peerId).length === 0);
    // The honest holder keeps its reservation.
    assert.equal(await reserve(second, relay), STATUS.ok);
  } finally {
    await Promise.all([relay, ...clients].map((n) => n.stop()));
  }
});

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
