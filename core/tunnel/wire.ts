/**
 * The one thing a tunnel adds to the bytes it carries: the listener's answer, the first byte it
 * sends on a stream (docs/tunnel.md). 0 means accepted, and the service's bytes follow; any other
 * status is a refusal, followed by the length of its reason (one byte) and the reason in UTF-8, so
 * the forwarder knows it has the whole refusal without waiting for the listener's FIN.
 */
import { concatBytes } from '../encoding/bytes.ts';
import type { Duplex } from '../net/duplex.ts';
import { streamProtocolId } from '../net/network.ts';

/** The listener's answer. */
export const ANSWER = { accepted: 0, notAllowed: 1, busy: 2, targetDown: 3 } as const;

/** A refusal's reason is cut to this many bytes (its length is one byte). */
export const MAX_REASON_BYTES = 255;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The libp2p protocol of tunnel protocol `name`: `/mesh/tunnel/1/<name>`. */
export function tunnelProtocolId(name: string): string {
  return streamProtocolId('tunnel', name);
}

/** A refusal: its status byte, the length of its reason and the reason. */
export function refusalFrame(status: number, reason: string): Uint8Array {
  const text = encoder.encode(reason).subarray(0, MAX_REASON_BYTES);
  return concatBytes(Uint8Array.of(status, text.length), text);
}

/** The listener refused the connection; `status` is its ANSWER. */
export class TunnelRefusedError extends Error {
  readonly status: number;

  constructor(status: number, reason: string) {
    super(reason);
    this.name = 'TunnelRefusedError';
    this.status = status;
  }
}

/**
 * The forwarding side's view of a stream to a listener: its reading starts after the answer, and
 * throws TunnelRefusedError when the answer is a refusal. Writing goes on before the answer comes,
 * so a client that speaks first loses no round trip (a refused client's bytes reach nobody).
 * `onAccepted` is called when the answer is an acceptance.
 */
export function afterAnswer(stream: Duplex, onAccepted: () => void = () => {}): Duplex {
  return {
    write: (chunk) => stream.write(chunk),
    closeWrite: () => stream.closeWrite(),
    reset: (reason) => stream.reset(reason),
    get closed() {
      return stream.closed;
    },
    async *[Symbol.asyncIterator]() {
      const chunks = stream[Symbol.asyncIterator]();
      const first = await chunks.next();
      if (first.done === true) throw new TunnelRefusedError(ANSWER.targetDown, 'the listener closed the stream without answering');
      const status = first.value[0]!;
      if (status !== ANSWER.accepted) throw new TunnelRefusedError(status, await reasonOf(first.value.subarray(1), chunks));
      onAccepted();
      if (first.value.length > 1) yield first.value.subarray(1);
      for (;;) {
        const next = await chunks.next();
        if (next.done === true) return;
        yield next.value;
      }
    },
  };
}

// The reason of a refusal whose first bytes (after the status) are `start`: its length, then as
// many bytes, read on from `chunks` as far as needed (a refusal is at most 256 bytes).
async function reasonOf(start: Uint8Array, chunks: AsyncIterator<Uint8Array>): Promise<string> {
  let bytes = start;
  try {
    while (bytes.length === 0 || bytes.length < 1 + bytes[0]!) {
      const next = await chunks.next();
      if (next.done === true) break;
      bytes = concatBytes(bytes, next.value);
    }
  } catch {
    // Reset before the whole reason came: what came is the reason.
  }
  return decoder.decode(bytes.subarray(1, 1 + (bytes[0] ?? 0)));
}
