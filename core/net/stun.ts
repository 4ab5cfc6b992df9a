/**
 * The one part of STUN (RFC 8489) a mesh node answers: a Binding request, answered with the
 * address and port it came from (XOR-MAPPED-ADDRESS), so that a node behind a NAT learns the
 * public mapping its ICE agent offers to a peer (docs/network.md, "Hole punching"). Everything
 * else (other methods, attributes the server would have to understand, anything that is not
 * STUN) gets no answer. Runtime-neutral: the host owns the UDP socket.
 */

const HEADER_BYTES = 20;
const MAGIC_COOKIE = 0x2112a442;
const BINDING_REQUEST = 0x0001;
const BINDING_SUCCESS = 0x0101;
const XOR_MAPPED_ADDRESS = 0x0020;
/** The largest request answered: a Binding request carries a few short attributes at most. */
export const MAX_STUN_REQUEST_BYTES = 548;

/** Where a datagram came from, as the host's socket reports it. */
export interface UdpSource {
  readonly address: string;
  readonly port: number;
}

/**
 * The Binding success response to `request` from `from`, or null when `request` is not a
 * well-formed Binding request (not STUN, another method, a comprehension-required attribute, or
 * longer than MAX_STUN_REQUEST_BYTES). The answer is 32 bytes (44 for IPv6), never much more than
 * the request: a forged source gains little amplification.
 */
export function stunBindingAnswer(request: Uint8Array, from: UdpSource): Uint8Array | null {
  if (request.length < HEADER_BYTES || request.length > MAX_STUN_REQUEST_BYTES) return null;
  const view = new DataView(request.buffer, request.byteOffset, request.byteLength);
  const type = view.getUint16(0);
  const length = view.getUint16(2);
  if (type !== BINDING_REQUEST || view.getUint32(4) !== MAGIC_COOKIE) return null;
  if (length % 4 !== 0 || HEADER_BYTES + length !== request.length) return null;
  // Attributes 0x0000-0x7FFF must be understood (RFC 8489 §14); a Binding request needs none of
  // them, and the responder knows none, so such a request is not one to answer.
  for (let at = HEADER_BYTES; at < request.length; ) {
    if (at + 4 > request.length) return null;
    const attribute = view.getUint16(at);
    const size = view.getUint16(at + 2);
    if (attribute < 0x8000) return null;
    at += 4 + Math.ceil(size / 4) * 4;
    if (at > request.length) return null;
  }
  const address = addressBytes(from.address);
  if (address === null || !Number.isInteger(from.port) || from.port < 0 || from.port > 0xffff) return null;
  const value = 4 + address.length;
  const answer = new Uint8Array(HEADER_BYTES + 4 + value);
  const out = new DataView(answer.buffer);
  out.setUint16(0, BINDING_SUCCESS);
  out.setUint16(2, 4 + value);
  // The cookie and the transaction id, as the request had them.
  answer.set(request.subarray(4, HEADER_BYTES), 4);
  out.setUint16(HEADER_BYTES, XOR_MAPPED_ADDRESS);
  out.setUint16(HEADER_BYTES + 2, value);
  out.setUint8(HEADER_BYTES + 5, address.length === 4 ? 0x01 : 0x02);
  out.setUint16(HEADER_BYTES + 6, from.port ^ (MAGIC_COOKIE >>> 16));
  // The address is XORed with the cookie, and for IPv6 with the transaction id after it.
  const mask = answer.subarray(4, HEADER_BYTES);
  for (let i = 0; i < address.length; i++) answer[HEADER_BYTES + 8 + i] = address[i]! ^ mask[i]!;
  return answer;
}

/** The mapped address a Binding success response carries (what a client reads), or null. */
export function stunMappedAddress(answer: Uint8Array): UdpSource | null {
  if (answer.length < HEADER_BYTES) return null;
  const view = new DataView(answer.buffer, answer.byteOffset, answer.byteLength);
  if (view.getUint16(0) !== BINDING_SUCCESS || view.getUint32(4) !== MAGIC_COOKIE) return null;
  for (let at = HEADER_BYTES; at + 4 <= answer.length; ) {
    const attribute = view.getUint16(at);
    const size = view.getUint16(at + 2);
    if (attribute === XOR_MAPPED_ADDRESS && at + 4 + size <= answer.length && (size === 8 || size === 20)) {
      const mask = answer.subarray(4, HEADER_BYTES);
      const raw = answer.slice(at + 8, at + 4 + size).map((b, i) => b ^ mask[i]!);
      const port = view.getUint16(at + 6) ^ (MAGIC_COOKIE >>> 16);
      return { address: size === 8 ? raw.join('.') : ipv6Text(raw), port };
    }
    at += 4 + Math.ceil(size / 4) * 4;
  }
  return null;
}

/** A Binding request with `transactionId` (12 bytes), as an ICE agent sends it. */
export function stunBindingRequest(transactionId: Uint8Array): Uint8Array {
  if (transactionId.length !== 12) throw new RangeError('a STUN transaction id is 12 bytes');
  const request = new Uint8Array(HEADER_BYTES);
  const view = new DataView(request.buffer);
  view.setUint16(0, BINDING_REQUEST);
  view.setUint32(4, MAGIC_COOKIE);
  request.set(transactionId, 8);
  return request;
}

const STUN_URL = /^stun:(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/;

/**
 * A STUN server's URL as ICE takes it (RFC 7064): `stun:HOST` or `stun:HOST:PORT` (3478 when
 * left out), an IPv6 host in brackets. RangeError otherwise.
 */
export function parseStunUrl(text: string): string {
  const match = typeof text === 'string' ? STUN_URL.exec(text) : null;
  const port = match?.[2] === undefined ? 3478 : Number(match[2]);
  if (match === null || port < 1 || port > 65_535) throw new RangeError(`${JSON.stringify(text)} is not a STUN server: give stun:HOST:PORT`);
  return `stun:${match[1]}:${port}`;
}

function addressBytes(text: string): Uint8Array | null {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4 !== null) {
    const parts = v4.slice(1).map(Number);
    return parts.every((p) => p <= 255) ? Uint8Array.from(parts) : null;
  }
  // An IPv4-mapped IPv6 source (a dual-stack socket) is answered as the IPv4 address it is.
  const mapped = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i.exec(text);
  if (mapped !== null) return addressBytes(mapped[1]!);
  return ipv6Bytes(text);
}

function ipv6Bytes(text: string): Uint8Array | null {
  const halves = text.split('::');
  if (halves.length > 2 || !/^[0-9a-fA-F:]+$/.test(text)) return null;
  const groups = (s: string): string[] => (s === '' ? [] : s.split(':'));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - tail.length;
  if ((halves.length === 1 && missing !== 0) || missing < 0) return null;
  const all = [...head, ...new Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  if (all.some((g) => g.length === 0 || g.length > 4)) return null;
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    const n = Number.parseInt(g, 16);
    bytes[2 * i] = n >> 8;
    bytes[2 * i + 1] = n & 0xff;
  });
  return bytes;
}

function ipv6Text(bytes: Uint8Array): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  return groups.join(':');
}
