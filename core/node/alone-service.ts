/**
 * A node with no peers joins nothing: no blocks, no jobs, no messages. This service says so on the
 * log once a minute while it lasts, with what to do, and GET /status carries the same advice
 * (`alone`) beside the number of peers (docs/network.md, "Finding peers").
 */
import type { Startable } from '../lifecycle.ts';
import type { Timer } from '../time/clock.ts';
import type { NodeComponents } from './node.ts';

/** How often a node without peers says so. */
export const ALONE_REPORT_MS = 60_000;

/** What a node without peers is told to do, where its host gives no advice of its own. */
export const DEFAULT_ALONE_ADVICE = 'this node has no peers: give it one to join through';

export interface AloneInit {
  /** What to do, with the exact commands (the host knows its options and data directory). */
  readonly advice?: string;
  readonly reportMs?: number;
}

export type AloneComponents = Pick<NodeComponents, 'network' | 'clock' | 'log'>;

export class AloneWatch implements Startable {
  readonly #c: AloneComponents;
  /** What to do when alone, with the exact commands. */
  readonly advice: string;
  readonly #reportMs: number;
  #timer: Timer | null = null;
  #wasAlone = false;

  constructor(components: AloneComponents, init: AloneInit = {}) {
    this.#c = components;
    this.advice = init.advice ?? DEFAULT_ALONE_ADVICE;
    this.#reportMs = init.reportMs ?? ALONE_REPORT_MS;
  }

  /** Connected peers now. */
  peers(): number {
    return this.#c.network.peers().length;
  }

  /** The advice while the node has no peers, null once it has one. */
  alone(): string | null {
    return this.peers() === 0 ? this.advice : null;
  }

  // The first word comes a full period after the start: bootstrap peers and mDNS answer within it.
  start(): void {
    this.#timer = this.#c.clock.setInterval(() => this.#report(), this.#reportMs);
  }

  stop(): void {
    this.#timer?.cancel();
    this.#timer = null;
  }

  #report(): void {
    const advice = this.alone();
    if (advice !== null) this.#c.log(`p2p: no peers. ${advice}`);
    else if (this.#wasAlone) this.#c.log(`p2p: no longer alone: ${this.peers()} peer${this.peers() === 1 ? '' : 's'}`);
    this.#wasAlone = advice !== null;
  }
}

export function aloneService(init: AloneInit = {}): (components: AloneComponents) => AloneWatch {
  return (components) => new AloneWatch(components, init);
}
