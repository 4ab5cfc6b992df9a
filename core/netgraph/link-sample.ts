/**
 * Link samples (node-messaging.md §3 "measured links"): what one link between two nodes measured,
 * `{a, b, rtt_ms, jitter_ms, loss, measured_at}`, signed by both of its ends. `a` is the smaller
 * NodeId (bytewise), so a link has one form. Each end signs the same domain-separated bytes
 * (`mesh/netgraph/link-sample`, the network's name, the sample's canonical encoding), so anyone can
 * check a sample without asking either node, and a sample signed by one side only is refused.
 */
import { SIGNATURE_LENGTH, type SigningKey, verify } from '../crypto/ed25519.ts';
import { compareBytes } from '../encoding/bytes.ts';
import { bytes32, bytes64, encode, f64, struct, uint53 } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { domainBytes } from '../ledger/domain.ts';
import { LinkSampleError } from './errors.ts';
import { MAX_RTT_MS } from './vivaldi.ts';

export interface LinkSample {
  readonly a: Uint8Array;
  readonly b: Uint8Array;
  /** The median of the measuring end's recent round trips, ms. */
  readonly rtt_ms: number;
  /** The mean absolute difference of consecutive round trips, ms. */
  readonly jitter_ms: number;
  /** The share of the measuring end's recent pings that failed, 0 to 1. */
  readonly loss: number;
  /** When it was measured, ms since the epoch (the measuring end's clock). */
  readonly measured_at: number;
}

export interface SignedLinkSample {
  readonly sample: LinkSample;
  readonly sig_a: Uint8Array;
  readonly sig_b: Uint8Array;
}

const SAMPLE_FIELDS = { a: bytes32, b: bytes32, rtt_ms: f64, jitter_ms: f64, loss: f64, measured_at: uint53 } as const;
export const linkSampleCodec = struct(SAMPLE_FIELDS, 'link-sample');
/** The sample's fields, then sig_a and sig_b (LINK_SAMPLE_BYTES in all). */
export const signedLinkSampleCodec = struct({ ...SAMPLE_FIELDS, sig_a: bytes64, sig_b: bytes64 }, 'signed-link-sample');
/** 32 + 32 + 3 × 8 + 8 = 96 bytes of sample and 2 × 64 of signatures: 224. */
export const LINK_SAMPLE_BYTES = 96 + 2 * SIGNATURE_LENGTH;

const DOMAIN = 'mesh/netgraph/link-sample';

/** The bytes both ends sign. */
export function linkSigningBytes(sample: LinkSample, network: string): Uint8Array {
  return domainBytes(DOMAIN, network, encode(linkSampleCodec, sample));
}

/** The link's key in books: a and b in hex, a first. */
export function linkKey(a: Uint8Array, b: Uint8Array): string {
  return compareBytes(a, b) < 0 ? `${toHex(a)}:${toHex(b)}` : `${toHex(b)}:${toHex(a)}`;
}

/** How far ahead of the receiver's clock a measured_at may be (clocks differ). */
export const FUTURE_SLACK_MS = 30_000;
/** How old a sample may be and still be taken (and kept: the book's expiry). */
export const SAMPLE_MAX_AGE_MS = 10 * 60_000;

/**
 * Checks what a sample says, without its signatures: a < b, the figures in range, measured_at
 * within [now − SAMPLE_MAX_AGE_MS, now + FUTURE_SLACK_MS]. Throws LinkSampleError.
 */
export function checkLinkSample(sample: LinkSample, now: number): LinkSample {
  if (compareBytes(sample.a, sample.b) >= 0)
    throw new LinkSampleError('bad-parties', 'a link sample names its ends smaller NodeId first, and two different nodes');
  if (!(sample.rtt_ms > 0 && sample.rtt_ms <= MAX_RTT_MS)) throw new LinkSampleError('out-of-range', `rtt_ms ${sample.rtt_ms} is not in (0, ${MAX_RTT_MS}]`);
  if (!(sample.jitter_ms >= 0 && sample.jitter_ms <= MAX_RTT_MS))
    throw new LinkSampleError('out-of-range', `jitter_ms ${sample.jitter_ms} is not in [0, ${MAX_RTT_MS}]`);
  if (!(sample.loss >= 0 && sample.loss <= 1)) throw new LinkSampleError('out-of-range', `loss ${sample.loss} is not in [0, 1]`);
  if (sample.measured_at > now + FUTURE_SLACK_MS)
    throw new LinkSampleError('bad-time', `measured_at is ${sample.measured_at - now} ms ahead of this node's clock`);
  if (sample.measured_at < now - SAMPLE_MAX_AGE_MS)
    throw new LinkSampleError('bad-time', `measured_at is ${now - sample.measured_at} ms old, more than the ${SAMPLE_MAX_AGE_MS} ms a sample is kept`);
  return sample;
}

/** One end's signature of `sample`: the key must be a or b. */
export async function signLinkSample(sample: LinkSample, key: SigningKey, network: string): Promise<Uint8Array> {
  if (compareBytes(key.publicKey, sample.a) !== 0 && compareBytes(key.publicKey, sample.b) !== 0)
    throw new LinkSampleError('not-a-party', 'only an end of the link signs its sample');
  return key.sign(linkSigningBytes(sample, network));
}

/**
 * Checks a doubly signed sample: its figures (checkLinkSample) and both signatures. Throws
 * LinkSampleError.
 */
export async function verifyLinkSample(signed: SignedLinkSample, network: string, now: number): Promise<SignedLinkSample> {
  const { sample, sig_a, sig_b } = signed;
  checkLinkSample(sample, now);
  const bytes = linkSigningBytes(sample, network);
  const [okA, okB] = await Promise.all([verify(sample.a, bytes, sig_a), verify(sample.b, bytes, sig_b)]);
  if (!okA || !okB)
    throw new LinkSampleError('bad-signature', `the signature of ${okA ? 'b' : 'a'} does not verify: a link sample is signed by both of its ends`);
  return signed;
}

/** What the measuring end sends the other to countersign: the sample and its own signature. */
export const proposalCodec = struct({ ...SAMPLE_FIELDS, sig: bytes64 }, 'link-sample-proposal');
