/**
 * What the API accepts, each rule stated once: path ids, paging and log parameters and the request
 * bodies (superstruct), and their conversion to what the NodeService takes. Every refusal is a 400
 * problem naming the field, except a signal payload over its size bound (413).
 *
 * Hex is strict lowercase, as everywhere in the core (encoding/hex.ts): one spelling per id.
 */
import { array, type Context, enums, integer, nullable, number, object, optional, refine, type Struct, string, tuple, union, validate } from 'superstruct';
import type { OpenRequest, Receipt } from '../channels/types.ts';
import { parseAmount } from '../encoding/amount.ts';
import { fromHex } from '../encoding/hex.ts';
import { InvalidAmountError, WrongTypeError } from '../errors.ts';
import { IMAGE_REFERENCE_RULE, isImageReference } from '../jobs/image.ts';
import { SPEC_LIMITS } from '../jobs/spec.ts';
import type { JobRequest } from '../jobs/types.ts';
import { isName, NAME_RULE, type Recipient } from '../names/names.ts';
import type { DeployRequest, KillRequest } from '../placement/caller.ts';
import { MAX_GRANT_CHARS } from '../placement/wire.ts';
import type { SignalFilter } from '../signal/book.ts';
import type { SignalRequest } from '../signal/service.ts';
import { MAX_CAPABILITIES, MAX_CAPABILITY_NAME_BYTES, MAX_PAYLOAD_BYTES } from '../signal/signal.ts';
import { writtenAsFraction } from '../web/strict-json.ts';
import { ApiProblem } from './problem.ts';

const HEX_ID = /^[0-9a-f]{64}$/;
const HEX_BYTES = /^(?:[0-9a-f]{2})*$/;
const U32_MAX = 0xffff_ffff;
const encoder = new TextEncoder();

/**
 * Whether `text` is well-formed Unicode: a lone surrogate has no UTF-8 form, so no codec can write
 * it. String.prototype.isWellFormed is ES2024 (Node 20, Deno, Chromium 111); the lib is ES2023.
 */
function wellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

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

/**
 * What DELETE /jobs/:id names: a job id, a container id (64 hex, or a prefix of 12 or more) or a
 * container name (`mesh-job-…`). Docker's own name rule, bounded: the node looks it up, 404 if none.
 */
export function jobRefParam(value: string): string {
  if (/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(value)) return value;
  throw badQuery('job_id', 'must be a job id, a container id or a container name: at most 128 of A-Z a-z 0-9 _ . -, starting with a letter or digit');
}

/** GET /transactions/:node_id paging: default and cap of `limit` (node-api.md §8). */
export const TX_PAGE_DEFAULT = 100;
export const TX_PAGE_MAX = 500;

/** A path or query parameter that breaks its rule: 400 naming it. */
export function badQuery(name: string, detail: string): ApiProblem {
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

/** A count written as plain decimal digits (no sign, no leading zero), within the safe integers. */
function count(text: string, name: string): number {
  const value = Number(text);
  if (!/^(?:0|[1-9][0-9]*)$/.test(text) || !Number.isSafeInteger(value)) throw badQuery(name, 'must be a non-negative integer');
  return value;
}

/**
 * GET /jobs/:id/logs: the lines after `after` (default 0, from the start), as JSON or, with
 * `follow=1`, as a stream. A reconnecting EventSource names where it stopped in `Last-Event-ID`,
 * used when the query has no `after`.
 */
export function logParams(query: Readonly<Record<string, string>>, lastEventId: string | null): { after: number; follow: boolean } {
  const follow = query.follow;
  if (follow !== undefined && follow !== '0' && follow !== '1') throw badQuery('follow', 'must be 1 (a stream) or 0');
  const after = query.after ?? lastEventId;
  return { after: after === null ? 0 : count(after, query.after === undefined ? 'Last-Event-ID' : 'after'), follow: follow === '1' };
}

/**
 * Where a stream resumes: the `Last-Event-ID` a reconnecting EventSource sends, a non-negative
 * integer; null when there is none (an empty one is none, as EventSource treats it).
 */
export function lastEventIdParam(value: string | null): number | null {
  return value === null || value === '' ? null : count(value, 'Last-Event-ID');
}

/** The query parameter of /blocks/stream. */
export const BLOCK_STREAM_PARAMS: readonly string[] = ['min_height'];

/**
 * The first height /blocks/stream sends: after `Last-Event-ID` (the height a reconnecting client
 * saw last; it wins, since an EventSource reconnects with its first URL), else `min_height`, else
 * null (from the next block).
 */
export function blockStreamFrom(query: Readonly<Record<string, string>>, lastEventId: string | null): number | null {
  const minHeight = query.min_height === undefined ? null : count(query.min_height, 'min_height');
  const resumed = lastEventIdParam(lastEventId);
  return resumed === null ? minHeight : resumed + 1;
}

/** The query parameters of GET /signals and /signals/stream. */
export const SIGNAL_FILTER_PARAMS: readonly string[] = ['from', 'to'];

/**
 * `from` (a sender's node id) and `to` (an addressee's node id, or `broadcast`) of the signal
 * routes; both may be given (a signal must pass both), neither is every signal.
 */
export function signalFilterParams(query: Readonly<Record<string, string>>): SignalFilter {
  const from = query.from ?? null;
  const to = query.to ?? null;
  if (from !== null) {
    const verdict = idRule(from);
    if (verdict !== true) throw badQuery('from', `must be a node id: ${verdict}`);
  }
  if (to !== null && to !== 'broadcast') {
    const verdict = idRule(to);
    if (verdict !== true) throw badQuery('to', `must be a node id or broadcast: ${verdict}`);
  }
  return { from, to };
}

// ---------------------------------------------------------------------------------------------
// Bodies

/** A body's node id: 64 lowercase hex characters. */
export const NodeId = refine(string(), 'node id', idRule);

/** A body's recipient: a node id, or a name (the node resolves it on its chain; docs/names.md). */
export const RecipientField = refine(
  string(),
  'recipient',
  (to) => isName(to) || idRule(to) === true || `must be a node id (64 lowercase hex characters) or a name (${NAME_RULE})`,
);

/** A valid recipient as the node takes it: a name stays text, a node id becomes its bytes. */
export function recipientOf(to: string): Recipient {
  return isName(to) ? to : fromHex(to, 32);
}

/** Bytes as lowercase hex: an even number of 0-9a-f. */
export const HexBytes = refine(string(), 'hex', (hex) => HEX_BYTES.test(hex) || 'must be lowercase hex of whole bytes (an even number of 0-9a-f)');

/**
 * Refuses with 413 a body whose `field` holds more than `maxBytes` bytes of hex, before the rest of
 * the body is looked at: an oversized payload is said as such, whatever else is wrong.
 */
export function boundHexField(value: unknown, field: string, maxBytes: number): void {
  const hex = (value as Record<string, unknown> | null)?.[field];
  if (typeof hex === 'string' && hex.length > 2 * maxBytes) {
    throw new ApiProblem('too-large', `${field} holds more than ${maxBytes} bytes`, { limit_bytes: maxBytes });
  }
}

/**
 * What JSON.parse cannot tell apart: `1.0` and `1e3` are read as the integers 1 and 1000. A field
 * that takes a JSON integer refuses a number written with a fraction or an exponent, as the body
 * reader noted it (core/web/strict-json.ts).
 */
function writtenWhole(value: unknown, context: Context): true | string {
  return (
    typeof value !== 'number' ||
    !writtenAsFraction(context.branch.at(-2), context.path.at(-1)) ||
    `must be written as an integer, without a fraction or an exponent (${value}, not as a float)`
  );
}

/** A JSON integer, written as one (not `1.0`, not `1e3`): every integer field of a body. */
export function wholeInteger(): Struct<number, null> {
  return refine(integer(), 'integer', writtenWhole);
}

/** An amount as DESIGN §4 takes it (a decimal string or a safe JSON integer written as one), above 0 when `positive`. */
function amountOf(positive: boolean): Struct<string | number, null> {
  return refine(union([string(), number()]), 'amount', (value, context) => {
    const whole = writtenWhole(value, context);
    if (whole !== true) return whole;
    try {
      return parseAmount(value) > 0n || !positive || 'must be above 0';
    } catch (error) {
      if (error instanceof InvalidAmountError || error instanceof WrongTypeError) return error.message;
      throw error;
    }
  });
}

const Amount = amountOf(true);

/** POST /transfer: `to` a node id or a name. */
export const TransferBody = object({ to: RecipientField, amount: Amount });

/** POST /bond and /unbond: the amount moved into or out of the node's bond. */
export const StakeBody = object({ amount: Amount });

const CapabilityName = refine(string(), 'capability name', (name) => {
  if (!wellFormed(name)) return 'must be well-formed Unicode (it holds a lone surrogate)';
  const bytes = encoder.encode(name).length;
  if (bytes < 1 || bytes > MAX_CAPABILITY_NAME_BYTES) return `must be 1 to ${MAX_CAPABILITY_NAME_BYTES} bytes of UTF-8, got ${bytes}`;
  // Printable: no control characters (C0, DEL, C1).
  return !/\p{Cc}/u.test(name) || 'must not contain control characters';
});

const CapabilityVersion = refine(wholeInteger(), 'capability version', (v) => (v >= 0 && v <= U32_MAX) || `must be 0 to ${U32_MAX}`);

const Capabilities = refine(array(object({ name: CapabilityName, version: CapabilityVersion })), 'capabilities', (list) => {
  if (list.length > MAX_CAPABILITIES) return `at most ${MAX_CAPABILITIES} capabilities, got ${list.length}`;
  const names = new Set(list.map((c) => c.name));
  return names.size === list.length || 'capability names must be distinct';
});

/** POST /signals/send. */
export const SignalBody = object({
  to: refine(string(), 'recipient', (to) => to === 'broadcast' || idRule(to) === true || 'must be "broadcast" or a 64-character lowercase hex node id'),
  payload_hex: optional(HexBytes),
  capabilities: optional(Capabilities),
  burn_tx_id_hex: optional(NodeId),
});

/** An integer from `min` to `max`. */
function bounded(min: number, max: number): Struct<number, null> {
  return refine(wholeInteger(), 'bounded integer', (n) => (n >= min && n <= max) || `must be ${min} to ${max}, got ${n}`);
}

const Image = refine(string(), 'image', (image) => {
  const bytes = encoder.encode(image).length;
  if (bytes > SPEC_LIMITS.imageBytes) return `must be at most ${SPEC_LIMITS.imageBytes} bytes, got ${bytes}`;
  return isImageReference(image) || `must be ${IMAGE_REFERENCE_RULE}`;
});

/** Bounds of a job's limits (docs/node-api.md): what one host could be asked to give one job. */
export const JOB_LIMITS = {
  cpuCores: [1, 1024],
  // 4 MiB: the least memory a container starts with; 1 TiB the most.
  memMb: [4, 1_048_576],
  // Up to 30 days.
  durationSecs: [1, 2_592_000],
  gpus: [0, 16],
} as const;

/**
 * A string the spec codec can write: well-formed Unicode (a lone surrogate has no UTF-8 form), no
 * NUL (which ends a C string in the engine), at most `maxBytes` of UTF-8. The spec's bounds come
 * from SPEC_LIMITS, so a body that passes here always encodes.
 */
function specText(what: string, maxBytes: number): Struct<string, null> {
  return refine(string(), what, (text) => {
    if (!wellFormed(text)) return 'must be well-formed Unicode (it holds a lone surrogate)';
    if (text.includes('\0')) return 'must not contain NUL';
    const bytes = encoder.encode(text).length;
    return bytes <= maxBytes || `must be at most ${maxBytes} bytes of UTF-8, got ${bytes}`;
  });
}

const Cmd = refine(array(specText('argument', SPEC_LIMITS.cmdItemBytes)), 'cmd', (args) => {
  if (args.length === 0) return "must hold at least one word (leave cmd out for the image's own command)";
  return args.length <= SPEC_LIMITS.cmdItems || `at most ${SPEC_LIMITS.cmdItems} words, got ${args.length}`;
});

// ASCII by its grammar, so its characters are its bytes.
const EnvKey = refine(string(), 'variable name', (key) => {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) return 'must be a variable name: a letter or _, then letters, digits or _';
  return key.length <= SPEC_LIMITS.envKeyBytes || `must be at most ${SPEC_LIMITS.envKeyBytes} bytes, got ${key.length}`;
});

const Env = refine(array(tuple([EnvKey, specText('value', SPEC_LIMITS.envValueBytes)])), 'env', (pairs) => {
  if (pairs.length > SPEC_LIMITS.envPairs) return `at most ${SPEC_LIMITS.envPairs} pairs, got ${pairs.length}`;
  return new Set(pairs.map(([key]) => key)).size === pairs.length || 'variable names must be distinct';
});

/** POST /jobs/bid. */
export const JobBidBody = object({
  image: Image,
  cmd: optional(Cmd),
  env: optional(Env),
  cpu_cores: bounded(...JOB_LIMITS.cpuCores),
  mem_mb: bounded(...JOB_LIMITS.memMb),
  duration_secs: bounded(...JOB_LIMITS.durationSecs),
  bid: Amount,
  billing: optional(enums(['settle', 'heartbeat'])),
  gpus: optional(bounded(...JOB_LIMITS.gpus)),
});

const Grant = refine(
  string(),
  'grant',
  (grant) => (grant.length >= 1 && grant.length <= MAX_GRANT_CHARS) || `must be a capability token's text form, 1 to ${MAX_GRANT_CHARS} characters`,
);

/** POST /mesh-deploy: a heartbeat-billed job for one host, with a dial hint and a grant. */
export const MeshDeployBody = object({
  node_id: NodeId,
  image: Image,
  cmd: optional(nullable(Cmd)),
  cpu_cores: bounded(...JOB_LIMITS.cpuCores),
  mem_mb: bounded(...JOB_LIMITS.memMb),
  duration_secs: bounded(...JOB_LIMITS.durationSecs),
  bid: Amount,
  hint_multiaddr: optional(
    nullable(refine(string(), 'multiaddr', (ma) => /^\/\S{1,1023}$/.test(ma) || 'must be a multiaddr: /…, at most 1,024 characters, no spaces')),
  ),
  grant: optional(nullable(Grant)),
});

/** POST /mesh-kill. */
export const MeshKillBody = object({ node_id: NodeId, job_id: NodeId, grant: optional(nullable(Grant)) });

/** A payer's Ed25519 signature, 128 lowercase hex. */
const Signature = refine(
  string(),
  'signature',
  (sig) => /^[0-9a-f]{128}$/.test(sig) || `must be 128 lowercase hex characters (an Ed25519 signature), got ${sig.length} characters`,
);

/** POST /jobs/:id/settle: a cost (0 allowed) and the payer's signature. */
export const SettleBody = object({ cost: amountOf(false), payer_sig: Signature });

/** POST /channels/open: the host, the capacity locked, and the last height the host may close at. */
export const ChannelOpenBody = object({
  host: NodeId,
  capacity: Amount,
  expiry_height: optional(refine(wholeInteger(), 'height', (h) => (h >= 1 && Number.isSafeInteger(h)) || 'must be a block height, an integer of at least 1')),
});

/** POST /channels/receipt: the channel, its host (the receipt names it), and the cumulative total paid (0 allowed). */
export const ChannelReceiptBody = object({ channel_id: NodeId, host: NodeId, cumulative: amountOf(false) });

/** POST /channels/:id/close: a receipt from the payer, or no body (or {}) to close with the best one held. */
export const ChannelCloseBody = object({ cumulative: optional(amountOf(false)), payer_sig: optional(Signature) });

/** POST /jobs/:id/expire: no body, or an empty object. */
export const EmptyBody = object({});

/** The most fields a 400 problem lists. */
export const MAX_LISTED_ERRORS = 100;

/** Validates `value` against `struct`, or throws one 400 problem listing every field at fault (the first MAX_LISTED_ERRORS). */
export function checkBody<T>(value: unknown, struct: Struct<T, unknown>): T {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ApiProblem('invalid-body', 'the body must be a JSON object');
  }
  const [error, valid] = validate(value, struct);
  if (error === undefined) return valid;
  const errors: { name: string; detail: string }[] = [];
  const said = new Set<string>();
  for (const failure of error.failures()) {
    const name = failure.path.join('.');
    // superstruct reports an unexpected key as a value of type `never`.
    const detail = failure.type === 'never' ? 'unknown field' : failure.value === undefined ? 'required' : failure.message;
    // A missing field of a union type fails once per member: said once.
    const key = `${name}\0${detail}`;
    if (said.has(key)) continue;
    said.add(key);
    errors.push({ name, detail });
    // A long list of faults in one body (an array of bad entries) says enough with its first ones.
    if (errors.length === MAX_LISTED_ERRORS) break;
  }
  throw new ApiProblem('invalid-body', errors.map((e) => `${e.name}: ${e.detail}`).join('; '), { errors });
}

/** The transfer a valid body asks for. */
export function transferRequest(value: unknown): { to: Recipient; amount: bigint } {
  const body = checkBody(value, TransferBody);
  return { to: recipientOf(body.to), amount: parseAmount(body.amount) };
}

/** The amount a valid /bond or /unbond body asks for. */
export function stakeRequest(value: unknown): bigint {
  return parseAmount(checkBody(value, StakeBody).amount);
}

/** The job a valid bid asks for, with the defaults filled in. */
export function jobRequest(value: unknown): JobRequest {
  const body = checkBody(value, JobBidBody);
  return {
    image: body.image,
    cmd: body.cmd ?? null,
    env: body.env ?? [],
    cpuCores: body.cpu_cores,
    memMb: body.mem_mb,
    durationSecs: body.duration_secs,
    gpus: body.gpus ?? 0,
    bid: parseAmount(body.bid),
    billing: body.billing ?? 'settle',
  };
}

/** The settlement a valid body offers. */
export function settleRequest(value: unknown): { cost: bigint; payerSig: Uint8Array } {
  const body = checkBody(value, SettleBody);
  return { cost: parseAmount(body.cost), payerSig: fromHex(body.payer_sig, 64) };
}

/** The channel a valid open body asks for; no expiry_height: the node's default. */
export function channelOpenRequest(value: unknown): OpenRequest {
  const body = checkBody(value, ChannelOpenBody);
  return { host: fromHex(body.host, 32), capacity: parseAmount(body.capacity), expiryHeight: body.expiry_height ?? null };
}

/** The receipt a valid body asks the payer to sign. */
export function channelReceiptRequest(value: unknown): { channelId: Uint8Array; host: Uint8Array; cumulative: bigint } {
  const body = checkBody(value, ChannelReceiptBody);
  return { channelId: fromHex(body.channel_id, 32), host: fromHex(body.host, 32), cumulative: parseAmount(body.cumulative) };
}

/** The receipt a close body hands the host, or null for none (no body, or {}); 400 for half a receipt. */
export function channelCloseRequest(value: unknown): Receipt | null {
  if (value === undefined) return null;
  const body = checkBody(value, ChannelCloseBody);
  if (body.cumulative === undefined && body.payer_sig === undefined) return null;
  if (body.cumulative === undefined || body.payer_sig === undefined) {
    const name = body.cumulative === undefined ? 'cumulative' : 'payer_sig';
    throw new ApiProblem(
      'invalid-body',
      `${name}: required with ${name === 'cumulative' ? 'payer_sig' : 'cumulative'} (a receipt is both; leave both out to close with the best receipt held)`,
      {
        errors: [{ name, detail: 'required when the other half of the receipt is given' }],
      },
    );
  }
  return { cumulative: parseAmount(body.cumulative), payerSig: fromHex(body.payer_sig, 64) };
}

/** The signal a valid body asks for: 413 for a payload over 16 KiB, 400 for a payload without a burn. */
export function signalRequest(value: unknown): SignalRequest {
  boundHexField(value, 'payload_hex', MAX_PAYLOAD_BYTES);
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

/** The directed deploy a valid body asks for. */
export function meshDeployRequest(value: unknown): DeployRequest {
  const body = checkBody(value, MeshDeployBody);
  return {
    nodeId: fromHex(body.node_id, 32),
    image: body.image,
    cmd: body.cmd ?? null,
    cpuCores: body.cpu_cores,
    memMb: body.mem_mb,
    durationSecs: body.duration_secs,
    bid: parseAmount(body.bid),
    hint: body.hint_multiaddr ?? null,
    grant: body.grant ?? null,
  };
}

/** The kill a valid body asks for. */
export function meshKillRequest(value: unknown): KillRequest {
  const body = checkBody(value, MeshKillBody);
  return { nodeId: fromHex(body.node_id, 32), jobId: fromHex(body.job_id, 32), grant: body.grant ?? null };
}
