/**
 * Directed placement as a service of the node (docs/placement.md): what the /mesh-deploy and
 * /mesh-kill routes ask of it, over the job market's book, host side and payer side.
 */
import type { Chain } from '../chain/chain.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import type { JobBook } from '../jobs/book.ts';
import type { JobHost } from '../jobs/host.ts';
import type { JobPayer } from '../jobs/payer.ts';
import type { Startable } from '../lifecycle.ts';
import type { Network } from '../net/network.ts';
import type { Clock } from '../time/clock.ts';
import { type DeployRequest, type KillRequest, PlacementCaller } from './caller.ts';
import { PlacementHost } from './host.ts';

export interface PlacementService {
  /**
   * Asks the target host to run a heartbeat-billed job, pays for it once the host holds room, and
   * resolves when the host reports it running. PlacementError: 'self' (400), a host's reason
   * (502), 'timeout' (504); CapabilityError 'malformed' (400) for a grant that does not decode.
   */
  meshDeploy(request: DeployRequest): Promise<{ job_id: string }>;
  /** Asks the target host to stop a job; the same errors. */
  meshKill(request: KillRequest): Promise<void>;
}

export interface PlacementInit {
  /** Keys whose capability tokens directed placement honours here besides this node's own (`--capability-root`). */
  readonly capabilityRoots?: readonly Uint8Array[];
}

export interface PlacementComponents {
  readonly key: SigningKey;
  readonly chain: Chain;
  readonly network: Network;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  /** The market's book and its two sides: placement places jobs through them. */
  readonly jobs: { readonly book: JobBook; readonly host: JobHost; readonly payer: JobPayer };
}

/** Directed placement on a chosen host, as caller and as host (docs/placement.md). */
export class PlacementFeature implements PlacementService, Startable {
  readonly #host: PlacementHost;
  readonly #caller: PlacementCaller;

  constructor(c: PlacementComponents, init: PlacementInit) {
    const common = { book: c.jobs.book, chain: c.chain, network: c.network, clock: c.clock, log: c.log, self: c.key.publicKey };
    this.#host = new PlacementHost({ ...common, jobs: c.jobs.host, roots: init.capabilityRoots ?? [] });
    this.#caller = new PlacementCaller({ ...common, payer: c.jobs.payer });
  }

  start(): void {
    this.#host.start();
  }

  beforeStop(): void {
    this.#host.stop();
  }

  meshDeploy(request: DeployRequest): Promise<{ job_id: string }> {
    return this.#caller.deploy(request);
  }

  meshKill(request: KillRequest): Promise<void> {
    return this.#caller.kill(request);
  }
}

export function placementService(init: PlacementInit = {}): (components: PlacementComponents) => PlacementFeature {
  return (components) => new PlacementFeature(components, init);
}
