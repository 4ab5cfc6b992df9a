/**
 * The capability token's format: a chain of links, each signed by its issuer, each handing its
 * audience at most what its parent handed it (docs/capabilities.md states the bytes). The binary
 * form is canonical (core/encoding/codec.ts), so a token has one byte string and each link one id;
 * the text form is `mcap1.` and the base64url of those bytes.
 *
 * @example
 * const link = await signLink(hostKey, network, { audience, allows, not_before, expiry, nonce });
 * const text = encodeToken([link]);
 * decodeToken(text); // deep-equals [link]
 */
import type { SigningKey } from '../crypto/ed25519.ts';
import { sha256 } from '../crypto/sha256.ts';
import { compareBytes } from '../encoding/bytes.ts';
import { array, bytes32, bytes64, type Codec, decode, encode, fixedBytes, option, sortedSet, struct, u16, u32, u128, uint53, utf8 } from '../encoding/codec.ts';
import { MeshError } from '../errors.ts';
import { domainBytes } from '../ledger/domain.ts';
import { fromBase64Url, toBase64Url } from './base64url.ts';
import { CapabilityError } from './errors.ts';

/** The commands a token can authorise; other strings may sit in a token but authorise nothing. */
export const COMMANDS = ['deploy', 'kill'] as const;
export type CapabilityCommand = (typeof COMMANDS)[number];
/** The most links a token may have: the root's, and seven delegations below it. */
export const MAX_LINKS = 8;
/** Seconds a host's clock may be off from the issuers': each end of the window is stretched by it. */
export const CLOCK_SKEW_SECS = 60;

/** Bounds of one link's fields. */
export const LINK_LIMITS = {
  commands: 16,
  commandBytes: 32,
  images: 16,
  imageBytes: 255,
  nodes: 64,
  nonceBytes: 16,
} as const;

/** The text form's prefix: the format and its version. */
export const TOKEN_PREFIX = 'mcap1.';

/** What a link allows its audience: each field bounds the use; null bounds nothing of its own. */
export interface Allowance {
  /** Sorted (by encoding) and unique; unknown strings may appear, only COMMANDS are ever authorised. */
  readonly commands: readonly string[];
  /** At most this many cores. */
  readonly cpu_cores: number | null;
  /** At most this many MiB. */
  readonly mem_mb: number | null;
  /** At most this many seconds of running. */
  readonly duration_secs: number | null;
  /** At most this bid, in base units. */
  readonly bid: bigint | null;
  /** Image reference prefixes; null: any image. */
  readonly images: readonly string[] | null;
  /** Target host NodeIds; null: any host. */
  readonly nodes: readonly Uint8Array[] | null;
}

/** One delegation: `issuer` gives `audience` what `allows` says, from `not_before` to `expiry` (unix seconds). */
export interface Link {
  readonly issuer: Uint8Array;
  readonly audience: Uint8Array;
  readonly allows: Allowance;
  readonly not_before: number;
  readonly expiry: number;
  /** 16 random bytes: two links of the same terms are two links, with two ids. */
  readonly nonce: Uint8Array;
  /** Ed25519 by `issuer` over domainBytes('mesh/capability/1', network, <the link without sig>). */
  readonly sig: Uint8Array;
}

/** A chain of links from a root (the first issuer) to the holder (the last audience). */
export type Token = readonly Link[];

const commandCodec = utf8(LINK_LIMITS.commandBytes);
const imageCodec = utf8(LINK_LIMITS.imageBytes);

export const allowanceCodec = struct(
  {
    commands: sortedSet(commandCodec, LINK_LIMITS.commands),
    cpu_cores: option(u16),
    mem_mb: option(u32),
    duration_secs: option(u32),
    bid: option(u128),
    images: option(sortedSet(imageCodec, LINK_LIMITS.images)),
    nodes: option(sortedSet(bytes32, LINK_LIMITS.nodes)),
  },
  'allowance',
);

const unsignedFields = {
  issuer: bytes32,
  audience: bytes32,
  allows: allowanceCodec,
  not_before: uint53,
  expiry: uint53,
  nonce: fixedBytes(LINK_LIMITS.nonceBytes),
};

/** What a link's signature covers: every field but `sig`. */
export const unsignedLinkCodec = struct(unsignedFields, 'capability link');
/** A signed link: the unsigned encoding followed by the 64-byte signature. */
export const linkCodec = struct({ ...unsignedFields, sig: bytes64 }, 'capability link');
// Bounded by the format's depth; decodeToken reads the count first so a deeper token is 'too-deep'.
const tokenCodec = array(linkCodec, MAX_LINKS);

/** Domain tags: what a link's signature is over, and what its id hashes. */
export const LINK_SIGNATURE_TAG = 'mesh/capability/1';
export const LINK_ID_TAG = 'mesh/capability-id/1';

// The codecs take mutable arrays; a Link's are readonly and never changed by encoding.
type Encoded<C> = C extends Codec<infer T> ? T : never;
const asEncoded = <C>(_codec: C, value: unknown): Encoded<C> => value as Encoded<C>;

/** A set in the codec's one order (ascending encodings), duplicates dropped. */
function canonicalSet<T>(codec: Codec<T>, values: readonly T[]): T[] {
  const keyed = values.map((value) => ({ value, bytes: encode(codec, value) }));
  keyed.sort((a, b) => compareBytes(a.bytes, b.bytes));
  return keyed.filter((k, i) => i === 0 || compareBytes(keyed[i - 1]!.bytes, k.bytes) !== 0).map((k) => k.value);
}

/** `allows` with its sets sorted as the format wants them and duplicates dropped (signLink does this itself). */
export function canonicalAllowance(allows: Allowance): Allowance {
  return {
    commands: canonicalSet(commandCodec, allows.commands),
    cpu_cores: allows.cpu_cores,
    mem_mb: allows.mem_mb,
    duration_secs: allows.duration_secs,
    bid: allows.bid,
    images: allows.images === null ? null : canonicalSet(imageCodec, allows.images),
    nodes: allows.nodes === null ? null : canonicalSet(bytes32, allows.nodes),
  };
}

/** The canonical bytes a link's signature covers. */
export function unsignedLinkBytes(link: Omit<Link, 'sig'>): Uint8Array {
  const { issuer, audience, allows, not_before, expiry, nonce } = link;
  return encode(unsignedLinkCodec, asEncoded(unsignedLinkCodec, { issuer, audience, allows, not_before, expiry, nonce }));
}

/** What the issuer signs: the unsigned link's bytes under the signature's domain tag and the network. */
export function linkSigningBytes(network: string, unsignedBytes: Uint8Array): Uint8Array {
  return domainBytes(LINK_SIGNATURE_TAG, network, unsignedBytes);
}

/**
 * The id of a link given its unsigned bytes and signature: a signed link encodes as exactly those
 * two one after the other (struct fields in order), so the check hashes without encoding again.
 */
export function linkIdOf(network: string, unsignedBytes: Uint8Array, sig: Uint8Array): Uint8Array {
  const signed = new Uint8Array(unsignedBytes.length + sig.length);
  signed.set(unsignedBytes);
  signed.set(sig, unsignedBytes.length);
  return sha256(domainBytes(LINK_ID_TAG, network, signed));
}

/**
 * A link's id: SHA-256 over its signed canonical bytes under the id's domain tag. It is what the
 * issuer's RevokeCapability names as `token_id`.
 */
export function linkId(network: string, link: Link): Uint8Array {
  return linkIdOf(network, unsignedLinkBytes(link), link.sig);
}

function malformed(detail: string): CapabilityError {
  return new CapabilityError('malformed', detail);
}

/**
 * Signs a link from `key` (the issuer) to `fields.audience`. The allowance's sets are put in
 * their canonical order. Throws CapabilityError 'malformed' for a field outside the format's
 * bounds, or a window that ends before it begins.
 */
export async function signLink(key: SigningKey, network: string, fields: Omit<Link, 'issuer' | 'sig'>): Promise<Link> {
  if (fields.not_before > fields.expiry) {
    throw malformed(`the link would be valid never: not_before ${fields.not_before} is after expiry ${fields.expiry}`);
  }
  let unsigned: Omit<Link, 'sig'>;
  let bytes: Uint8Array;
  try {
    unsigned = {
      issuer: key.publicKey,
      audience: fields.audience,
      allows: canonicalAllowance(fields.allows),
      not_before: fields.not_before,
      expiry: fields.expiry,
      nonce: fields.nonce,
    };
    bytes = unsignedLinkBytes(unsigned);
  } catch (error) {
    if (error instanceof MeshError) throw malformed(error.message);
    throw error;
  }
  return { ...unsigned, sig: await key.sign(linkSigningBytes(network, bytes)) };
}

/** The token's canonical bytes. Throws CapabilityError 'malformed' ('too-deep') for a token outside the format. */
export function tokenBytes(token: Token): Uint8Array {
  if (token.length === 0) throw malformed('a token holds at least one link');
  if (token.length > MAX_LINKS) throw new CapabilityError('too-deep', `the token has ${token.length} links, more than the ${MAX_LINKS} a token may have`);
  try {
    return encode(tokenCodec, asEncoded(tokenCodec, token));
  } catch (error) {
    if (error instanceof MeshError) throw malformed(error.message);
    throw error;
  }
}

/** The text form: `mcap1.` followed by the base64url (no padding) of the canonical bytes. */
export function encodeToken(token: Token): string {
  return TOKEN_PREFIX + toBase64Url(tokenBytes(token));
}

/**
 * Decodes the text form. Throws CapabilityError: 'too-deep' when it declares more than MAX_LINKS
 * links, 'malformed' for anything else that is not exactly what `encodeToken` writes (a wrong
 * prefix, base64url with padding or stray bits, bytes that are not canonical or trail, no link, a
 * link whose not_before is after its expiry).
 */
export function decodeToken(text: string): Token {
  if (typeof text !== 'string') throw malformed('a token is a string');
  if (!text.startsWith(TOKEN_PREFIX)) throw malformed(`a token starts with ${TOKEN_PREFIX}`);
  const body = text.slice(TOKEN_PREFIX.length);
  // The link count comes first (a u32 in the first six characters): a deeper token is refused as such.
  const head = fromBase64Url(body.slice(0, 8));
  if (head !== null && head.length >= 4) {
    const count = new DataView(head.buffer).getUint32(0);
    if (count > MAX_LINKS) throw new CapabilityError('too-deep', `the token declares ${count} links, more than the ${MAX_LINKS} a token may have`);
  }
  if (body.length > MAX_TOKEN_TEXT) throw malformed(`the token is longer than any token can be (${MAX_TOKEN_TEXT} characters after the prefix)`);
  const bytes = fromBase64Url(body);
  if (bytes === null) throw malformed('the token is not base64url without padding');
  let token: Link[];
  try {
    token = decode(tokenCodec, bytes);
  } catch (error) {
    if (error instanceof MeshError) throw malformed(error.message);
    throw error;
  }
  if (token.length === 0) throw malformed('a token holds at least one link');
  token.forEach((link, i) => {
    if (link.not_before > link.expiry) throw malformed(`link ${i} is valid never: not_before ${link.not_before} is after expiry ${link.expiry}`);
  });
  return token;
}

// The largest link: every set full of its longest entries, every option present.
const MAX_ALLOWANCE_BYTES =
  4 +
  LINK_LIMITS.commands * (4 + LINK_LIMITS.commandBytes) +
  (1 + 2) +
  (1 + 4) +
  (1 + 4) +
  (1 + 16) +
  (1 + 4 + LINK_LIMITS.images * (4 + LINK_LIMITS.imageBytes)) +
  (1 + 4 + LINK_LIMITS.nodes * 32);
/** The most bytes one link can take. */
export const MAX_LINK_BYTES = 32 + 32 + MAX_ALLOWANCE_BYTES + 8 + 8 + LINK_LIMITS.nonceBytes + 64;
/** The most bytes a token can take, and the most base64url characters after its prefix. */
export const MAX_TOKEN_BYTES = 4 + MAX_LINKS * MAX_LINK_BYTES;
const MAX_TOKEN_TEXT = Math.ceil((MAX_TOKEN_BYTES * 4) / 3);
