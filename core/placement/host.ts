/**
 * Directed placement on the target host (docs/placement.md "On the host"): it decides, alone, who
 * may deploy and kill here. A caller is authorised by admin trust (a TrustGrant this host made for
 * it, on the chain) or by the capability token it forwards, checked against this host's key and
 * its configured roots, the chain's revocations and this host's clock. An authorised deploy holds
 * room for the caller's heartbeat-billed bid, which then comes through the jobs protocol and runs
 * as any job does: same executor, sandbox, billing and reports.
 */
import { checkToken, type Use } from '../capabilities/check.ts';
import { CapabilityError } from '../capabilities/errors.ts';
import { decodeToken } from '../capabilities/token.ts';
import type { Chain } from '../chain/chain.ts';
import { decode, encode } from '../encoding/codec.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { clip } from '../encoding/text.ts';
import type { JobBook } from '../jobs/book.ts';
import type { JobHost } from '../jobs/host.ts';
import { billingName, decodeSpec, type JobSpec, specProblem } from '../jobs/spec.ts';
import { MAX_REASON_BYTES } from '../jobs/wire.ts';
import type { Network, RpcRequest } from '../net/network.ts';
import type { Clock } from '../time/clock.ts';
import type { PlacementErrorCode } from './errors.ts';
import { deployRequestCodec, killRequestCodec, PLACEMENT_RPC, placementAnswerCodec } from './wire.ts';

export interface PlacementHostOptions {
  readonly chain: Chain;
  readonly network: Network;
  readonly jobs: JobHost;
  readonly book: JobBook;
  /** This host's NodeId: a root of every token it honours. */
  readonly self: Uint8Array;
  /** Further roots the operator configured (`--capability-root`). */
  readonly roots: readonly Uint8Array[];
  readonly clock: Clock;
  readonly log: (line: string) => void;
}

const DONE = encode(placementAnswerCodec, { answer: 'Done' });

function refused(reason: PlacementErrorCode, detail: string): Uint8Array {
  return encode(placementAnswerCodec, { answer: 'Refused', reason, detail: clip(detail, MAX_REASON_BYTES) });
}

export class PlacementHost {
  readonly #o: PlacementHostOptions;
  #unserve: (() => void)[] = [];

  constructor(options: PlacementHostOptions) {
    this.#o = options;
  }

  start(): void {
    this.#unserve = [
      this.#o.network.serve(PLACEMENT_RPC.deploy, (request) => this.#onDeploy(request), { relayed: true }),
      this.#o.network.serve(PLACEMENT_RPC.kill, (request) => this.#onKill(request), { relayed: true }),
    ];
  }

  /** Stops answering deploys and kills. */
  stop(): void {
    for (const unserve of this.#unserve) unserve();
    this.#unserve = [];
  }

  async #onDeploy({ peer, data }: RpcRequest): Promise<Uint8Array> {
    const request = decode(deployRequestCodec, data);
    let spec: JobSpec;
    try {
      spec = decodeSpec(request.spec);
    } catch (error) {
      return refused('bad-request', `the spec does not decode: ${(error as Error).message}`);
    }
    const problem = specProblem(spec);
    if (problem !== null) return refused('bad-request', problem);
    if (billingName(spec.billing) !== 'heartbeat') return refused('bad-request', 'a directed job is heartbeat-billed');
    // What a token cannot bound, a directed job does not ask for (the caller's API sends neither).
    if (spec.gpus !== 0) return refused('bad-request', 'a directed job asks for no GPUs');
    if (spec.env.length > 0) return refused('bad-request', 'a directed job carries no environment');
    const use = this.#use('deploy', spec, request.bid);
    const denied = await this.#denial(peer, use, request.grant);
    if (denied !== null) return refused(denied.reason, denied.detail);
    // Asked again when the bid comes: a trust withdrawn or a link revoked in between stops it.
    const stillAuthorised = async (): Promise<string | null> => {
      const now = await this.#denial(peer, use, request.grant);
      return now === null ? null : `no longer authorised (${now.reason}): ${now.detail}`;
    };
    const reasons = this.#o.jobs.reserveDirected(toHex(peer), request.spec, spec, request.bid, stillAuthorised);
    if (reasons.length === 0) return DONE;
    return refused(this.#o.jobs.engine.ready ? 'no-room' : 'container-error', reasons.join('; '));
  }

  async #onKill({ peer, data }: RpcRequest): Promise<Uint8Array> {
    const request = decode(killRequestCodec, data);
    const jobId = toHex(request.job_id);
    const record = this.#o.book.get(jobId);
    if (record === undefined || record.role !== 'host') return refused('unknown-job', `this host runs no job ${jobId}`);
    // A job's payer may always stop its own job; anyone else needs authority over this very job.
    if (record.payer !== toHex(peer)) {
      const use = this.#use('kill', decodeSpec(fromHex(record.spec)), BigInt(record.bid));
      const denied = await this.#denial(peer, use, request.grant);
      if (denied !== null) return refused(denied.reason, denied.detail);
    }
    this.#o.log(`placement: ${toHex(peer).slice(0, 16)}… kills ${jobId.slice(0, 16)}…`);
    await this.#o.jobs.killJob(record);
    return DONE;
  }

  /** What a token must allow for `command` on a job of `spec` and `bid` here: every bound a token can set. */
  #use(command: 'deploy' | 'kill', spec: JobSpec, bid: bigint): Use {
    return { command, host: this.#o.self, cpuCores: spec.cpu_cores, memMb: spec.mem_mb, durationSecs: spec.duration_secs, bid, image: spec.image };
  }

  /** null when `peer` may do `use` here: admin trust first, else the grant. Otherwise why not. */
  async #denial(peer: Uint8Array, use: Use, grant: string | null): Promise<{ reason: PlacementErrorCode; detail: string } | null> {
    const { chain, self, roots, clock } = this.#o;
    if (chain.state.trust(self, peer) !== undefined) return null;
    if (grant === null) return { reason: 'untrusted', detail: 'the caller has no admin trust on this host and forwarded no grant' };
    try {
      await checkToken(decodeToken(grant), use, {
        network: chain.params.network,
        roots: [self, ...roots],
        presenter: peer,
        nowSecs: Math.floor(clock.now() / 1000),
        revoked: (issuer, linkId) => chain.state.revoked(issuer, linkId) !== undefined,
      });
      return null;
    } catch (error) {
      if (error instanceof CapabilityError) return { reason: error.code, detail: error.message };
      throw error;
    }
  }
}
