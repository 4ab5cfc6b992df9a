/**
 * What the API accepts, each rule stated once: path ids, paging parameters and the two request
 * bodies (superstruct), and their conversion to what the NodeService takes. Every refusal is a 400
 * problem naming the field, except a signal payload over its size bound (413).
 *
 * Hex is strict lowercase, as everywhere in the core (encoding/hex.ts): one spelling per id.
 */
import { array, integer, number, object, optional, refine, string, type Struct, union, validate } from 'superstruct';
import { InvalidAmountError, WrongTypeError } from '../errors.ts';
import { parseAmount } from '../encoding/amount.ts';
import { fromHex } from '../encoding/hex.ts';
import { MAX_CAPABILITIES, MAX_CAPABILITY_NAME_BYTES, MAX_PAYLOAD_BYTES } from '../signal/signal.ts';
import { ApiProblem } from './problem.ts';
import type { SignalRequest } from './routes/signals.ts';

const HEX_ID = /^[0-9a-f]{64}$/;
const HEX_BYTES = /^(?:[0-9a-f]{2})*$/;
const U32_MAX = 0xffff_ffff;
const encoder = new TextEncoder();

function idRule(value: string): true | string {
  if (HEX_ID.test(value)) return true;
  if (/^[0-9a-fA-F]{64}$/.test(value)) return 'must be lowercase hex';
  return `must be 64 lowercase hex characters, got ${value.length} characters`;
}

/** A path's node id, decoded; 400 naming `name` otherwise. */
export function nodeIdParam(value: string, name = 'node_id'): Uint8Array {
  const verdict = idRule(value);
  if (verdict !== true) {
    throw new ApiProblem('invalid-parameter', `${name} ${verdict}`, { errors: [{ name, detail: verdict }] });
  }
  return fromHex(value, 32);
}

/** GET /transactions/:node_id paging: default and cap of `limit` (node-api.md §8). */
export const TX_PAGE_DEFAULT = 100;
export const TX_PAGE_MAX = 500;

function badQuery(name: string, detail: string): ApiProblem {
  return new ApiProblem('invalid-parameter', `${name} ${detail}`, { errors: [{ name, detail }] });
}

/**
 * `limit` and `before` of GET /transactions/:node_id. `limit` is a positive integer, clamped to
 * 500 ("capped at 500"); `before` a non-negative safe integer. Both are plain decimal digits: no
 * sign, no leading zero, no fraction.
 */
export function txPageParams(query: Readonly<Record<string, string>>): { limit: number; before?: number } {
  const limitText = query.limit;
  let limit = TX_PAGE_DEFAULT;
  if (limitText !== undefined) {
    if (!/^[1-9][0-9]*$/.test(limitText)) throw badQuery('limit', 'must be a positive integer (1 to 500; larger asks get 500)');
    limit = limitText.length > 3 ? TX_PAGE_MAX : Math.min(Number(limitText), TX_PAGE_MAX);
  }
  const beforeText = query.before;
  if (beforeText === undefined) return { limit };
  const before = Number(beforeText);
  if (!/^(?:0|[1-9][0-9]*)$/.test(beforeText) || !Number.isSafeInteger(before)) {
    throw badQuery('before', 'must be a non-negative integer block height');
  }
  return { limit, before };
}

// ---------------------------------------------------------------------------------------------
// Bodies

const NodeId = refine(string(), 'node id', idRule);

const Amount = refine(union([string(), number()]), 'amount', (value) => {
  try {
    return parseAmount(value) > 0n || 'must be above 0';
  } catch (error) {
    if (error instanceof InvalidAmountError || error instanceof WrongTypeError) return error.message;
    throw error;
  }
});

/** POST /transfer. */
export const TransferBody = object({ to: NodeId, amount: Amount });

const CapabilityName = refine(string(), 'capability name', (name) => {
  const bytes = encoder.encode(name).length;
  if (bytes < 1 || bytes > MAX_CAPABILITY_NAME_BYTES) return `must be 1 to ${MAX_CAPABILITY_NAME_BYTES} bytes of UTF-8, got ${bytes}`;
  // Printable: no control characters (C0, DEL, C1).
  return !/\p{Cc}/u.test(name) || 'must not contain control characters';
});

const CapabilityVersion = refine(integer(), 'capability version', (v) => (v >= 0 && v <= U32_MAX) || `must be 0 to ${U32_MAX}`);

const Capabilities = refine(array(object({ name: CapabilityName, version: CapabilityVersion })), 'capabilities', (list) => {
  if (list.length > MAX_CAPABILITIES) return `at most ${MAX_CAPABILITIES} capabilities, got ${list.length}`;
  const names = new Set(list.map((c) => c.name));
  return names.size === list.length || 'capability names must be distinct';
});

/** POST /signals/send. */
export const SignalBody = object({
  to: refine(string(), 'recipient', (to) => to === 'broadcast' || idRule(to) === true || 'must be "broadcast" or a 64-character lowercase hex node id'),
  payload_hex: optional(refine(string(), 'payload', (hex) => HEX_BYTES.test(hex) || 'must be lowercase hex of whole bytes (an even number of 0-9a-f)')),
  capabilities: optional(Capabilities),
  burn_tx_id_hex: optional(NodeId),
});

/** Validates `value` against `struct`, or throws one 400 problem listing every field at fault. */
export function checkBody<T>(value: unknown, struct: Struct<T, unknown>): T {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ApiProblem('invalid-body', 'the body must be a JSON object');
  }
  const [error, valid] = validate(value, struct);
  if (error === undefined) return valid;
  const errors = error.failures().map((failure) => {
    const name = failure.path.join('.');
    // superstruct reports an unexpected key as a value of type `never`.
    const detail = failure.type === 'never' ? 'unknown field' : failure.value === undefined ? 'required' : failure.message;
    return { name, detail };
  });
  throw new ApiProblem('invalid-body', errors.map((e) => `${e.name}: ${e.detail}`).join('; '), { errors });
}

/** The transfer a valid body asks for. */
export function transferRequest(value: unknown): { to: Uint8Array; amount: bigint } {
  const body = checkBody(value, TransferBody);
  return { to: fromHex(body.to, 32), amount: parseAmount(body.amount) };
}

/** The signal a valid body asks for: 413 for a payload over 16 KiB, 400 for a payload without a burn. */
export function signalRequest(value: unknown): SignalRequest {
  const payloadHex = (value as { payload_hex?: unknown } | null)?.payload_hex;
  if (typeof payloadHex === 'string' && payloadHex.length > 2 * MAX_PAYLOAD_BYTES) {
    throw new ApiProblem('too-large', `payload_hex holds more than ${MAX_PAYLOAD_BYTES} bytes`, { limit_bytes: MAX_PAYLOAD_BYTES });
  }
  const body = checkBody(value, SignalBody);
  const payload = fromHex(body.payload_hex ?? '');
  if (payload.length > 0 && body.burn_tx_id_hex === undefined) {
    throw new ApiProblem('invalid-body', 'burn_tx_id_hex: required when payload_hex is not empty (a payload is paid for by a burn)', {
      errors: [{ name: 'burn_tx_id_hex', detail: 'required when payload_hex is not empty' }],
    });
  }
  return {
    to: body.to === 'broadcast' ? 'broadcast' : fromHex(body.to, 32),
    payload,
    capabilities: body.capabilities ?? [],
    burnTxId: body.burn_tx_id_hex === undefined ? null : fromHex(body.burn_tx_id_hex, 32),
  };
}
