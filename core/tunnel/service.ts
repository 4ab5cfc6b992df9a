/**
 * Tunnels as a service of the node (docs/tunnel.md): the routes' face of TunnelService, present
 * on every node; without TCP sockets from its host it refuses to open tunnels (503).
 */
import type { Random } from '../crypto/random.ts';
import type { Startable } from '../lifecycle.ts';
import type { Network } from '../net/network.ts';
import type { Clock } from '../time/clock.ts';
import { TunnelError } from './errors.ts';
import type { TunnelSockets } from './sockets.ts';
import { TunnelService } from './tunnels.ts';
import type { TunnelRequest, TunnelView } from './types.ts';

export interface TunnelsService {
  /**
   * Opens a listener or a forward. TunnelError 'protocol-taken', 'too-many-tunnels', 'bind-failed'
   * (409), 'self', 'bad-allow-list' (400), 'unavailable' (503: this host has no TCP sockets).
   */
  openTunnel(request: TunnelRequest): Promise<TunnelView>;
  listTunnels(): TunnelView[];
  /** One tunnel, or undefined. */
  getTunnel(id: string): TunnelView | undefined;
  /** Closes a tunnel and resets its connections; false when there is no such tunnel. */
  closeTunnel(id: string): Promise<boolean>;
}

export interface TunnelsComponents {
  readonly network: Network;
  readonly clock: Clock;
  readonly random: Random;
  readonly log: (line: string) => void;
}

export class TunnelsFeature implements TunnelsService, Startable {
  readonly #tunnels: TunnelService | null;

  constructor(components: TunnelsComponents, sockets: TunnelSockets | undefined) {
    this.#tunnels = sockets === undefined ? null : new TunnelService({ ...components, sockets });
  }

  async stop(): Promise<void> {
    await this.#tunnels?.stop();
  }

  openTunnel(request: TunnelRequest): Promise<TunnelView> {
    if (this.#tunnels === null) return Promise.reject(new TunnelError('unavailable', 'this host gives the node no TCP sockets for tunnels'));
    return this.#tunnels.open(request);
  }

  listTunnels(): TunnelView[] {
    return this.#tunnels?.list() ?? [];
  }

  getTunnel(id: string): TunnelView | undefined {
    return this.#tunnels?.get(id);
  }

  closeTunnel(id: string): Promise<boolean> {
    return this.#tunnels?.close(id) ?? Promise.resolve(false);
  }
}

/** Tunnels over `sockets`, the host's TCP on loopback (none: every open is refused with 503). */
export function tunnelsService(init: { readonly sockets?: TunnelSockets } = {}): (components: TunnelsComponents) => TunnelsFeature {
  return (components) => new TunnelsFeature(components, init.sockets);
}
