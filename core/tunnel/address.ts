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
 * What is wrong with `text` as a loopback address (`127.0.0.1:8080`, `[::1]:8080`,
 * `localhost:8080`), or true when nothing is. Port 0 (a free one, for a listening address) only
 * when `anyPort`.
 */
export function loopbackRule(text: string, options: { anyPort?: boolean } = {}): true | string {
  const match = typeof text === 'string' ? /^(?:\[([^\]]+)\]|([^:[\]]+)):([^:]+)$/.exec(text) : null;
  if (match === null) return `must be host:port, got ${JSON.stringify(text)}`;
  const host = match[1] ?? match[2]!;
  if (!isLoopbackHost(host) || (match[1] !== undefined && host !== '::1')) {
    return `must be on the loopback interface (127.0.0.0/8, [::1] or localhost), got ${JSON.stringify(text)}`;
  }
  const portText = match[3]!;
  const port = PORT.test(portText) ? Number(portText) : NaN;
  const least = options.anyPort ? 0 : 1;
  if (!(port >= least && port <= 65_535)) return `must have a port from ${least} to 65535, got ${JSON.stringify(portText)}`;
  return true;
}

/** `text` as a loopback address (see loopbackRule); TunnelError 'bad-address' naming `what` otherwise. */
export function parseLoopbackAddress(text: string, what: string, options: { anyPort?: boolean } = {}): SocketAddress {
  const verdict = loopbackRule(text, options);
  if (verdict !== true) throw new TunnelError('bad-address', `${what} ${verdict}`);
  const split = text.lastIndexOf(':');
  return { host: text.slice(0, split).replace(/^\[|\]$/g, ''), port: Number(text.slice(split + 1)) };
}

/** `host:port`, with an IPv6 host in brackets. */
export function formatAddress(address: SocketAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}
