/**
 * Directed placement on the mesh RPC protocol 1 (docs/placement.md "Protocol"): two exchanges from
 * the caller's node to the target host, the caller authenticated by the connection.
 *
 * - `placement.deploy`: the job spec, the bid the caller will sign, and the grant it forwards (a
 *   capability token's text form, absent under admin trust). Answer: room is held for the caller's
 *   bid, or refused with a reason code and a detail. The bid itself follows on `jobs.offer`.
 * - `placement.kill`: a job id and the grant. Answer: stopped, or refused.
 */
import { bytes32, type Infer, option, struct, u128, utf8, varBytes, variant } from '../encoding/codec.ts';
import { MAX_REASON_BYTES } from '../jobs/wire.ts';

export const PLACEMENT_RPC = {
  deploy: 'placement.deploy',
  kill: 'placement.kill',
} as const;

/** A grant's text form on the wire; the HTTP body that carries it is smaller still. */
export const MAX_GRANT_CHARS = 96 * 1024;
const SPEC_MAX_BYTES = 1_200_000;
const MAX_REASON_CODE_BYTES = 32;

export const deployRequestCodec = struct({ spec: varBytes(SPEC_MAX_BYTES), bid: u128, grant: option(utf8(MAX_GRANT_CHARS)) }, 'placement deploy request');

export const killRequestCodec = struct({ job_id: bytes32, grant: option(utf8(MAX_GRANT_CHARS)) }, 'placement kill request');

export const placementAnswerCodec = variant(
  'answer',
  {
    Done: [0, struct({}, 'done')],
    Refused: [1, struct({ reason: utf8(MAX_REASON_CODE_BYTES), detail: utf8(MAX_REASON_BYTES) }, 'refused')],
  },
  'placement answer',
);

export type PlacementAnswer = Infer<typeof placementAnswerCodec>;
