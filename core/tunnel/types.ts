/**
 * The tunnel's requests and views, as the API carries them (docs/tunnel.md): a listener exposes a
 * local TCP service to the nodes it allows; a forward opens a local port that reaches a listener.
 */
import type { SocketAddress } from './address.ts';

export type TunnelRequest =
  | {
      readonly kind: 'listen';
      /** The tunnel protocol name (rpcProtocolId's alphabet). */
      readonly protocol: string;
      /** The local service the connections go to. */
      readonly target: SocketAddress;
      /** The NodeIds that may connect. */
      readonly allow: readonly Uint8Array[];
    }
  | {
      readonly kind: 'forward';
      readonly protocol: string;
      /** The node whose listener the connections reach. */
      readonly node: Uint8Array;
      /** The local address to listen on (port 0: a free one). */
      readonly bind: SocketAddress;
    };

/** What every tunnel shows. */
interface TunnelCommon {
  readonly id: string;
  readonly protocol: string;
  /** Connections open now. */
  readonly connections: number;
  /** Connections carried since the tunnel opened. */
  readonly accepted: number;
  /** Connections refused since the tunnel opened (not allowed, over the limit, target or listener down). */
  readonly refused: number;
  /** Unix seconds. */
  readonly created_at: number;
}

export interface ListenView extends TunnelCommon {
  readonly kind: 'listen';
  /** host:port of the local service. */
  readonly target: string;
  /** NodeIds (hex) that may connect. */
  readonly allow: readonly string[];
}

export interface ForwardView extends TunnelCommon {
  readonly kind: 'forward';
  /** The listener's NodeId (hex). */
  readonly node: string;
  /** host:port this node listens on, the port chosen when 0 was asked for. */
  readonly address: string;
}

export type TunnelView = ListenView | ForwardView;
