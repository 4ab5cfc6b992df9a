/**
 * Directed placement on the caller's node (docs/placement.md "On the caller"): POST /mesh-deploy
 * and /mesh-kill. This node only carries the request: it checks the form of what it forwards (the
 * node id, the grant's encoding), asks the target host, and pays. Authority is the host's to decide.
 *
 * A deploy is two steps so that no credits are locked for a job the host refuses: the host first
 * authorises the caller and holds room (`placement.deploy`); only then does this node sign the
 * heartbeat-billed JobBid naming that host and offer it (`jobs.offer`), and it answers once the
 * host reports the container running, or its failure.
 */

import { decodeToken } from '../capabilities/token.ts';
import { parsePublicKey } from '../crypto/ed25519.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { decode, encode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { DecodeError, InvalidKeyError } from '../errors.ts';
import type { JobBook } from '../jobs/book.ts';
import type { JobPayer } from '../jobs/payer.ts';
import { statusOf } from '../jobs/record.ts';
import type { JobRequest } from '../jobs/types.ts';
import { NetworkError } from '../net/errors.ts';
import type { Network } from '../net/network.ts';
import { type Clock, sleep } from '../time/clock.ts';
import { PlacementError, reasonCode } from './errors.ts';
import { deployRequestCodec, killRequestCodec, PLACEMENT_RPC, type PlacementAnswer, placementAnswerCodec } from './wire.ts';

/** A directed deploy as POST /mesh-deploy takes it, validated. */
export interface DeployRequest {
  readonly nodeId: Uint8Array;
  readonly image: string;
  readonly cmd: readonly string[] | null;
  readonly cpuCores: number;
  readonly memMb: number;
  readonly durationSecs: number;
  /** Base units: the most the job may cost, paid by heartbeats. */
  readonly bid: bigint;
  /** A dial hint for the target (a multiaddr, possibly through a relay). */
  readonly hint: string | null;
  /** A capability token's text form, forwarded to the host. */
  readonly grant: string | null;
}

export interface KillRequest {
  readonly nodeId: Uint8Array;
  readonly jobId: Uint8Array;
  readonly grant: string | null;
}

/** How long the host has to answer one placement request. */
export const PLACEMENT_TIMEOUT_MS = 15_000;
/** How long a deploy waits for the host to report its container running (an image pull may be slow). */
export const DEPLOY_START_MS = 60_000;
const STATUS_POLL_MS = 200;

export interface PlacementCallerOptions {
  readonly network: Network;
  readonly payer: JobPayer;
  readonly book: JobBook;
  readonly self: Uint8Array;
  readonly clock: Clock;
}

export class PlacementCaller {
  readonly #o: PlacementCallerOptions;

  constructor(options: PlacementCallerOptions) {
    this.#o = options;
  }

  /** POST /mesh-deploy: the job id once its container runs on the target host. */
  async deploy(request: DeployRequest): Promise<{ job_id: string }> {
    this.#checkTarget(request.nodeId, request.grant);
    const job: JobRequest = {
      image: request.image,
      cmd: request.cmd,
      env: [],
      cpuCores: request.cpuCores,
      memMb: request.memMb,
      durationSecs: request.durationSecs,
      gpus: 0,
      bid: request.bid,
      billing: 'heartbeat',
    };
    // Terms and the free balance are checked before the host is asked (400, 402).
    const { specBytes } = this.#o.payer.checkBid(job);
    if (request.hint !== null) await this.#reach(this.#o.network.dial(request.nodeId, request.hint));
    const held = await this.#ask(request.nodeId, PLACEMENT_RPC.deploy, encode(deployRequestCodec, { spec: specBytes, bid: request.bid, grant: request.grant }));
    refuseOn(held);
    const host = toHex(request.nodeId);
    const { jobId, answer } = await this.#o.payer.bidDirected(job, host);
    if (answer === 'no-answer') {
      throw new PlacementError('timeout', `the host took no answer to job ${jobId}'s bid in time; it is offered again (GET /jobs/${jobId})`);
    }
    if (answer !== 'taken') throw new PlacementError('refused', `the host refused the bid: ${answer.join('; ')}`);
    return { job_id: await this.#started(jobId) };
  }

  /** POST /mesh-kill: resolves once the host has stopped the job's container. */
  async kill(request: KillRequest): Promise<void> {
    this.#checkTarget(request.nodeId, request.grant);
    refuseOn(await this.#ask(request.nodeId, PLACEMENT_RPC.kill, encode(killRequestCodec, { job_id: request.jobId, grant: request.grant })));
  }

  /**
   * The target is another node whose id is a public key, and the grant decodes within the format's
   * bounds, depth included (CapabilityError 'malformed' or 'too-deep', 400); its authority is the
   * host's to judge.
   */
  #checkTarget(nodeId: Uint8Array, grant: string | null): void {
    if (bytesEqual(nodeId, this.#o.self)) throw new PlacementError('self', 'node_id is this node; directed placement goes to another host');
    try {
      parsePublicKey(nodeId);
    } catch (error) {
      if (error instanceof InvalidKeyError) throw new PlacementError('bad-node-id', `node_id is not an Ed25519 public key: ${error.message}`);
      throw error;
    }
    if (grant !== null) decodeToken(grant);
  }

  async #ask(node: Uint8Array, protocol: string, data: Uint8Array): Promise<PlacementAnswer> {
    const answer = await this.#reach(this.#o.network.request(node, protocol, data, { timeoutMs: PLACEMENT_TIMEOUT_MS, relayed: true }));
    try {
      return decode(placementAnswerCodec, answer);
    } catch (error) {
      if (error instanceof DecodeError) throw new PlacementError('refused', `the host answered something that is not a placement answer: ${error.message}`);
      throw error;
    }
  }

  /** The mesh's failure to reach the host, or to hear from it in time, as a 504. */
  async #reach<T>(pending: Promise<T>): Promise<T> {
    try {
      return await pending;
    } catch (error) {
      if (error instanceof NetworkError && (error.code === 'timeout' || error.code === 'unreachable')) throw new PlacementError('timeout', error.message);
      throw error;
    }
  }

  /** Waits for the host's report of the job: running (or already past it), or failed. */
  async #started(jobId: string): Promise<string> {
    const { book, clock } = this.#o;
    const until = clock.now() + DEPLOY_START_MS;
    for (;;) {
      const state = book.get(jobId)?.state;
      if (state === undefined) throw new PlacementError('refused', `job ${jobId} is no longer on record`);
      if (state.kind === 'failed') throw new PlacementError('container-error', `job ${jobId} ${statusOf(state)}`);
      if (state.kind !== 'pending') return jobId;
      if (clock.now() >= until) {
        throw new PlacementError(
          'timeout',
          `the host took job ${jobId} but has not reported it running within ${DEPLOY_START_MS / 1000} s; it may still start (GET /jobs/${jobId})`,
        );
      }
      await sleep(clock, STATUS_POLL_MS);
    }
  }
}

/** A host's refusal as this node's error: 502 with the host's reason. */
function refuseOn(answer: PlacementAnswer): void {
  if (answer.answer === 'Refused') throw new PlacementError(reasonCode(answer.reason), `the host refused: ${answer.detail}`);
}
