/**
 * Why directed placement failed, each code with the status the caller's node answers
 * (node-api.md §7: 400 bad node_id or grant, 502 host rejected, 504 mesh timeout). A host's
 * refusal carries its reason code, which the problem shows as `rule` (docs/placement.md "Errors").
 */
import { type ErrorTable, RuledError } from '../errors.ts';

const REJECTED = { status: 502, problem: 'peer-refused' } as const;

export const PLACEMENT_ERRORS = {
  /** The target is this node: placement goes to another host (DELETE /jobs/:id stops a job here). */
  self: { status: 400, problem: 'invalid-body' },
  /** node_id is 64 hex but no Ed25519 public key, so no node has it. */
  'bad-node-id': { status: 400, problem: 'invalid-body' },
  /** The host could not be reached, or did not answer in time. It may still have acted. */
  timeout: { status: 504, problem: 'peer-timeout' },
  // The host's reasons. The first eleven are a capability token's (docs/capabilities.md).
  untrusted: REJECTED,
  malformed: REJECTED,
  'too-deep': REJECTED,
  misaligned: REJECTED,
  'bad-signature': REJECTED,
  widened: REJECTED,
  'not-yet-valid': REJECTED,
  expired: REJECTED,
  'not-presenter': REJECTED,
  revoked: REJECTED,
  'not-allowed': REJECTED,
  /** The host has no container engine, or its engine failed to start the job. */
  'container-error': REJECTED,
  /** The host's cores, memory or GPUs for jobs are taken. */
  'no-room': REJECTED,
  /** The spec or the terms are not ones the host takes (a bad image reference, a heartbeat worth 0). */
  'bad-request': REJECTED,
  /** The host runs no job of that id. */
  'unknown-job': REJECTED,
  /** A reason this node does not know (a newer host); the detail says it. */
  refused: REJECTED,
} as const satisfies ErrorTable;

export type PlacementErrorCode = keyof typeof PLACEMENT_ERRORS;

export class PlacementError extends RuledError<typeof PLACEMENT_ERRORS> {
  constructor(code: PlacementErrorCode, message: string) {
    super(PLACEMENT_ERRORS, code, message);
  }
}

/** A host's reason as this node's code: an unknown one is 'refused'. */
export function reasonCode(reason: string): PlacementErrorCode {
  const local: readonly string[] = ['self', 'bad-node-id', 'timeout'];
  return Object.hasOwn(PLACEMENT_ERRORS, reason) && !local.includes(reason) ? (reason as PlacementErrorCode) : 'refused';
}
