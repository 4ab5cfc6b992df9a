/**
 * One node of the hole-punching benchmark, as a process of its own in a NAT lab namespace: the
 * Node host's libp2p (host-node/p2p.ts) with its relay reservation (it bootstraps from the relay and
 * finds itself private), STUN servers and the WebRTC
 * upgrade of core/net, without the chain; on the public node, the STUN responder too. The
 * benchmark drives it over stdin and stdout as bench/lib/peer-process.ts says.
 *
 * Its one argument is a JSON object: {listenHost, port, bootstrap, stun, stunPort}.
 */
import { publicKeyFromRaw } from '@libp2p/crypto/keys';
import type { Connection } from '@libp2p/interface';
import { peerIdFromPublicKey } from '@libp2p/peer-id';
import { SigningKey } from '../../core/crypto/ed25519.ts';
import { fromHex, toHex } from '../../core/encoding/hex.ts';
import { readAll } from '../../core/net/duplex.ts';
import { startP2PNetwork } from '../../host-node/p2p.ts';
import { startStunServer } from '../../host-node/stun-server.ts';
import { answerRequests, type PeerOps } from '../lib/peer-process.ts';
import { BARE_PROTOCOLS, countBare, countPort, firstBare, PORT_PROTOCOLS, sendBare, sendPort, type Via } from '../tunnel/peer.ts';

export interface PunchPeerConfig {
  readonly listenHost: string;
  readonly port: number;
  readonly bootstrap: readonly string[];
  readonly stun: readonly string[];
  readonly stunPort: number | null;
}

/** Which connection an exchange ran on. */
export type Path = 'relayed' | 'direct';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

async function main(config: PunchPeerConfig): Promise<void> {
  const network = await startP2PNetwork({
    key: SigningKey.generate(),
    port: config.port,
    listenHost: config.listenHost,
    bootstrap: config.bootstrap,
    stun: config.stun,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  const stun = config.stunPort === null ? null : await startStunServer({ port: config.stunPort });
  const peerOf = (node: unknown) => peerIdFromPublicKey(publicKeyFromRaw(fromHex(String(node), 32)));

  // The serving side: both run on a relayed connection too, so the relay's path can be measured.
  await network.libp2p.handle(
    BARE_PROTOCOLS.up,
    async (stream) => {
      const count = await countBare(stream);
      stream.send(encoder.encode(String(count)));
      await stream.close();
    },
    { runOnLimitedConnection: true },
  );
  network.serveStream(
    PORT_PROTOCOLS.up,
    (stream) => {
      void (async () => {
        await stream.write(encoder.encode(String(await countPort(stream))));
        await stream.closeWrite();
      })().catch(() => stream.reset());
    },
    { relayed: true },
  );

  /** The connection to `node` on `path`. */
  const connectionOn = (node: unknown, path: Path): Connection => {
    const found = network.libp2p.getConnections(peerOf(node)).find((c) => c.status === 'open' && (c.limits !== undefined) === (path === 'relayed'));
    if (found === undefined) throw new Error(`no ${path} connection to ${String(node)}`);
    return found;
  };

  /** Sends `total` bytes to `node` on `path` and times it to the count's answer. */
  const exchange = async (node: unknown, total: number, via: Via, path: Path): Promise<{ bytes: number; ms: number }> => {
    const connection = connectionOn(node, path);
    const started = performance.now();
    const done = (bytes: number): { bytes: number; ms: number } => ({ bytes, ms: performance.now() - started });
    if (via === 'libp2p') {
      const stream = await connection.newStream(BARE_PROTOCOLS.up, { runOnLimitedConnection: true });
      const answer = firstBare(stream);
      await sendBare(stream, total);
      await stream.close();
      return done(Number(await answer));
    }
    // The network port picks the direct connection when there is one, else the relayed one.
    const stream = await network.openStream(fromHex(String(node), 32), PORT_PROTOCOLS.up, { relayed: true });
    await sendPort(stream, total);
    await stream.closeWrite();
    return done(Number(decoder.decode(await readAll(stream))));
  };

  const ops: PeerOps = {
    connect: async ({ node, hint }) => network.dial(fromHex(String(node), 32), String(hint)),
    state: async ({ node }) => {
      const peer = network.peers().find((p) => toHex(p.node) === String(node));
      return peer === undefined ? null : { relayed: peer.relayed, remoteAddr: peer.remoteAddr };
    },
    hangup: async ({ node }) => network.libp2p.hangUp(peerOf(node)),
    addresses: async () => network.addresses(),
    exchange: ({ node, bytes, via, path }) => exchange(node, Number(bytes), via as Via, path as Path),
    stop: async () => {
      await stun?.close();
      await network.stop();
      setTimeout(() => process.exit(0), 50);
    },
  };

  await answerRequests(
    { node_id: toHex(network.self), addr: network.addresses().find((a) => a.includes('/tcp/') && !a.includes('/ws') && !a.includes('/p2p-circuit'))! },
    ops,
  );
}

if (import.meta.main) await main(JSON.parse(process.argv[2] ?? '{}') as PunchPeerConfig);
