/**
 * Directed placement (docs/placement.md): what the /mesh-deploy and /mesh-kill routes ask of the node.
 */
import type { DeployRequest, KillRequest } from './caller.ts';

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
