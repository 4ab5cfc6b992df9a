/**
 * Why the tunnel feature refused a request, each code with the HTTP status and problem the API
 * answers it with (core/api/problem.ts holds the problem codes; docs/tunnel.md lists them).
 */
import { type ErrorTable, RuledError } from '../errors.ts';

const CONFLICT = { status: 409, problem: 'tunnel-conflict' } as const;

export const TUNNEL_ERRORS = {
  /** No tunnel of that id on this node. */
  'unknown-tunnel': { status: 404, problem: 'unknown-tunnel' },
  /** An address that is not on the loopback interface, or not host:port. */
  'bad-address': { status: 400, problem: 'invalid-body' },
  /** A listener that allows nobody, or more nodes than a listener keeps. */
  'bad-allow-list': { status: 400, problem: 'invalid-body' },
  /** A forward to this node itself. */
  self: { status: 400, problem: 'invalid-body' },
  /** This node already listens on the protocol. */
  'protocol-taken': CONFLICT,
  /** As many tunnels as the node keeps are open. */
  'too-many-tunnels': CONFLICT,
  /** The local address to listen on cannot be bound (in use, not permitted). */
  'bind-failed': CONFLICT,
  /** This host has no TCP sockets to give tunnels (a browser). */
  unavailable: { status: 503, problem: 'tunnel-unavailable' },
} as const satisfies ErrorTable;

export type TunnelErrorCode = keyof typeof TUNNEL_ERRORS;

export class TunnelError extends RuledError<typeof TUNNEL_ERRORS> {
  constructor(code: TunnelErrorCode, message: string) {
    super(TUNNEL_ERRORS, code, message);
  }
}
