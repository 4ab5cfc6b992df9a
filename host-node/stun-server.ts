/**
 * A STUN Binding responder on UDP (`mesh node --stun-port`): a publicly reachable node tells the
 * nodes behind NATs the address their datagrams arrive from, which their ICE agents offer to
 * peers when they punch a hole (docs/network.md, "Hole punching"). The answer is
 * core/net/stun.ts; this file owns the socket.
 */
import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import { MAX_STUN_REQUEST_BYTES, stunBindingAnswer } from '../core/net/stun.ts';

export interface StunServer {
  /** The UDP port it answers on (the one asked for, or the one picked for 0). */
  readonly port: number;
  close(): Promise<void>;
}

/** Answers STUN Binding requests on `host`:`port` (UDP, IPv4 and IPv6 unless `host` says one). */
export async function startStunServer(options: { readonly port: number; readonly host?: string }): Promise<StunServer> {
  const host = options.host ?? '::';
  const socket: Socket = createSocket({ type: host.includes(':') ? 'udp6' : 'udp4', ipv6Only: false, recvBufferSize: 64 * 1024 });
  socket.on('message', (message, from) => {
    if (message.length > MAX_STUN_REQUEST_BYTES) return;
    const answer = stunBindingAnswer(new Uint8Array(message.buffer, message.byteOffset, message.length), from);
    if (answer !== null) socket.send(answer, from.port, from.address);
  });
  // A send to a gone client fails on the socket; nothing waits for it.
  socket.on('error', () => {});
  const listening = once(socket, 'listening');
  socket.bind(options.port, host);
  await listening;
  return {
    port: socket.address().port,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
