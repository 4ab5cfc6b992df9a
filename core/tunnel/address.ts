/**
 * The local addresses a tunnel listens on and connects to: `host:port` on the loopback interface
 * only (127.0.0.0/8, [::1], localhost), so a tunnel never turns a node into a proxy that other
 * machines can reach, nor into one that reaches them (docs/tunnel.md).
 */
import { TunnelError } from './errors.ts';

export interface SocketAddress {
  /** `127.x.y.z`, `::1` (without brackets) or `localhost`. */
  readonly host: string;
  readonly port: number;
}

const IPV4 = /^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$/;
const PORT = /^(?:0|[1-9][0-9]{0,4})$/;

/** Whether `host` names this machine's loopback interface. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || (IPV4.test(host) && host.startsWith('127.'));
}

/**
 * `text` as a loopback address: `127.0.0.1:8080`, `[::1]:8080`, `localhost:8080`. Port 0 (a free
 * one, for a listening address) only when `anyPort`. TunnelError 'bad-address' otherwise, naming `what`.
 */
export function parseLoopbackAddress(text: string, what: string, options: { anyPort?: boolean } = {}): SocketAddress {
  const match = typeof text === 'string' ? /^(?:\[([^\]]+)\]|([^:[\]]+)):([^:]+)$/.exec(text) : null;
  if (match === null) throw new TunnelError('bad-address', `${what} must be host:port, got ${JSON.stringify(text)}`);
  const host = match[1] ?? match[2]!;
  const portText = match[3]!;
  if (!isLoopbackHost(host) || (match[1] !== undefined && host !== '::1')) throw new TunnelError('bad-address', `${what} must be on the loopback interface (127.0.0.0/8, [::1] or localhost), got ${JSON.stringify(text)}`);
  const port = PORT.test(portText) ? Number(portText) : NaN;
  const least = options.anyPort ? 0 : 1;
  if (!(port >= least && port <= 65_535)) throw new TunnelError('bad-address', `${what} must have a port from ${least} to 65535, got ${JSON.stringify(portText)}`);
  return { host, port };
}

/** `host:port`, with an IPv6 host in brackets. */
export function formatAddress(address: SocketAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}
