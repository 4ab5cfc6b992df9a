/**
 * Who may call what (node-api.md §5, DESIGN §4): the bearer token of mutating requests, the
 * same-origin rule that keeps them out of other web pages' reach, and the loopback origins that
 * may read GET and SSE routes cross-origin.
 */
import { ApiProblem } from './problem.ts';

const encoder = new TextEncoder();

/**
 * Whether `given` equals `expected`, in time that depends only on `expected`'s length: every byte
 * of the secret is compared whatever the first difference, so timing reveals no prefix of it.
 */
export function constantTimeEqual(given: Uint8Array, expected: Uint8Array): boolean {
  let diff = given.length ^ expected.length;
  for (let i = 0; i < expected.length; i++) diff |= (given[i] ?? 0) ^ expected[i]!;
  return diff === 0;
}

// RFC 9110 §11.6.2 and RFC 6750 §2.1: the scheme is case-insensitive, the token is token68.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** Throws the 401 problem (with `WWW-Authenticate: Bearer`) unless `request` carries `expected`. */
export function requireBearer(request: Request, expected: Uint8Array): void {
  const header = request.headers.get('authorization');
  if (header === null) {
    throw new ApiProblem(
      'unauthorized',
      "this request needs Authorization: Bearer <token> (the api.token file of the node's data directory)",
      {},
      {
        'www-authenticate': 'Bearer',
      },
    );
  }
  const token = BEARER.exec(header)?.[1];
  if (token === undefined || !constantTimeEqual(encoder.encode(token), expected)) {
    throw new ApiProblem(
      'unauthorized',
      "the bearer token is not this node's API token",
      {},
      {
        'www-authenticate': 'Bearer error="invalid_token"',
      },
    );
  }
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Whether `origin` is a web origin on this machine: http or https, host localhost, 127.0.0.1 or
 * [::1], any port. It must be an origin exactly as browsers serialize it, so look-alikes
 * (localhost.evil.com, 127.0.0.1.nip.io, a userinfo trick, a path) and `null` are not.
 */
export function isLoopbackOrigin(origin: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  return (url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK_HOSTS.has(url.hostname) && url.origin === origin;
}

/**
 * Throws the 403 problem when `request` carries an Origin other than the node's own (the origin of
 * the URL it was addressed to). Browsers send Origin on every non-GET request, so a page elsewhere
 * (another port on localhost included, and sandboxed `null` origins) never reaches a mutating
 * route, token or not. Clients that are not browsers send no Origin and pass.
 */
export function requireSameOrigin(request: Request, url: URL): void {
  const origin = request.headers.get('origin');
  if (origin !== null && origin !== url.origin) {
    throw new ApiProblem(
      'cross-origin',
      `requests that change state are not accepted from ${JSON.stringify(origin)}; they must come from ${url.origin} or from a client that is not a web page`,
    );
  }
}

// An IPv4 or bracketed IPv6 literal, as URL.hostname writes them.
const IP_LITERAL = /^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-f:.]+\])$/i;

/**
 * Throws the 403 problem unless the request was addressed to this machine by an IP address or as
 * localhost. A web page on a domain name that an attacker re-points at 127.0.0.1 (DNS rebinding)
 * would otherwise count as same-origin and read the node's API; its requests carry that name in Host.
 */
export function requireLocalHostName(url: URL): void {
  const host = url.hostname;
  if (host === 'localhost' || host.endsWith('.localhost') || IP_LITERAL.test(host)) return;
  throw new ApiProblem('host-not-allowed', `the node answers requests addressed to an IP address or localhost, not to ${JSON.stringify(host)}`);
}

// 127.0.0.0/8, as URL.hostname writes an IPv4 address.
const LOOPBACK_V4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/** Whether `address` (a socket's remote address) is this machine: 127.0.0.0/8 or ::1, IPv4-mapped or not. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
  return address === '::1' || LOOPBACK_V4.test(v4);
}

/**
 * Throws the 403 problem unless the request came from this machine (`remoteAddress`) and was
 * addressed to it by a loopback name (`localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`). The first
 * keeps other machines out when the node listens beyond loopback; the second keeps out a page that
 * reached this machine under another name (DNS rebinding) or through a LAN address.
 */
export function requireLoopback(url: URL, remoteAddress: string | undefined): void {
  const host = url.hostname;
  if (!(host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || LOOPBACK_V4.test(host))) {
    throw new ApiProblem('loopback-only', `this page is served to http://localhost or http://127.0.0.1 only, not to ${JSON.stringify(host)}`);
  }
  if (!isLoopbackAddress(remoteAddress)) throw new ApiProblem('loopback-only', 'this page is served to clients on the same machine only');
}
