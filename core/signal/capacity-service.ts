/**
 * This node's capacity broadcast (node-api.md §2 "Capacity"): a signal with the machine's cores and
 * memory, the jobs it runs, and the tags it earns. It is looked at every CAPACITY_INTERVAL_MS and
 * sent when it changed, or else once its paced period passed (CAPACITY_INTERVAL_MS up to
 * PACE_NODES nodes in the atlas, longer past them: core/net/broadcast-pace.ts), so what each node
 * receives of the mesh's broadcasts stays bounded however many nodes there are (docs/scale.md). `docker` and `gpu`
 * are claimed only while the container engine answers with them, and `mining` only on a node that
 * produces blocks. A node without this service offers no compute (the browser's wallet).
 */
import type { Startable } from '../lifecycle.ts';
import { pacedPeriodMs } from '../net/broadcast-pace.ts';
import type { Clock, Timer } from '../time/clock.ts';
import { CAPACITY_INTERVAL_MS, type Capacity, capacityCapabilities } from './atlas.ts';
import type { SignalService } from './service.ts';
import type { Capability } from './signal.ts';

export interface CapacityInit {
  /** The machine's capacity, read again at every broadcast. */
  readonly probe: () => Capacity;
  readonly intervalMs?: number;
}

/** What the broadcast reads of the job market, when the node has one. */
export interface EngineReport {
  readonly engine: { readonly ready: boolean; readonly gpus: number };
  readonly runningJobs: number;
  /** Asks the engine again. */
  checkEngine(): Promise<void>;
}

export interface CapacityComponents {
  readonly signals: Pick<SignalService, 'sendSignal' | 'atlas'>;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  readonly jobs?: EngineReport;
  /** Present on a node that produces blocks. */
  readonly producer?: unknown;
}

// The first broadcast goes out once peers had a moment to connect.
const FIRST_BROADCAST_MS = 2_000;

export class CapacityBroadcast implements Startable {
  readonly #c: CapacityComponents;
  readonly #probe: () => Capacity;
  readonly #intervalMs: number;
  readonly #timers: Timer[] = [];
  #sending: Promise<void> = Promise.resolve();
  /** What was last sent, and when. */
  #last: { readonly key: string; readonly atMs: number } | null = null;

  constructor(components: CapacityComponents, init: CapacityInit) {
    this.#c = components;
    this.#probe = init.probe;
    this.#intervalMs = init.intervalMs ?? CAPACITY_INTERVAL_MS;
  }

  afterStart(): void {
    const clock = this.#c.clock;
    this.#timers.push(clock.setInterval(() => this.#next(false), this.#intervalMs));
    this.#timers.push(clock.setTimeout(() => this.#next(true), Math.min(FIRST_BROADCAST_MS, this.#intervalMs)));
  }

  // Before the signals service stops: a broadcast under way is finished first.
  async beforeStop(): Promise<void> {
    for (const timer of this.#timers) timer.cancel();
    this.#timers.length = 0;
    await this.#sending;
  }

  #next(always: boolean): void {
    this.#sending = this.#sending.then(() => this.#broadcast(always));
  }

  /** Whether `capabilities` are to go out now: new ones, or the same once their paced period passed. */
  #due(capabilities: readonly Capability[], nowMs: number): boolean {
    const last = this.#last;
    if (last === null || last.key !== capabilityKey(capabilities)) return true;
    // The atlas holds the other nodes; this one is not among them.
    const period = pacedPeriodMs(this.#intervalMs, this.#c.signals.atlas().length + 1);
    // Looked at every interval: due at the look that falls closest to the period.
    return nowMs - last.atMs >= period - this.#intervalMs / 2;
  }

  /** The machine's capacity with what the market knows: running jobs, and `docker`/`gpu` only when the engine answers with them. */
  #capacity(): Capacity {
    const machine = this.#probe();
    const jobs = this.#c.jobs;
    const engine = jobs?.engine ?? { ready: false, gpus: 0 };
    const tags = machine.tags.filter((t) => t !== 'docker' && t !== 'gpu');
    if (engine.ready) tags.push('docker');
    if (engine.ready && engine.gpus > 0) tags.push('gpu');
    return { ...machine, runningJobs: jobs?.runningJobs ?? 0, tags };
  }

  async #broadcast(always: boolean): Promise<void> {
    try {
      await this.#c.jobs?.checkEngine();
      const capabilities = capacityCapabilities(this.#capacity(), this.#c.producer !== undefined);
      const now = this.#c.clock.now();
      if (!always && !this.#due(capabilities, now)) return;
      this.#last = { key: capabilityKey(capabilities), atMs: now };
      await this.#c.signals.sendSignal({ to: 'broadcast', payload: new Uint8Array(0), capabilities, burnTxId: null });
    } catch (error) {
      this.#c.log(`atlas: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

function capabilityKey(capabilities: readonly Capability[]): string {
  return capabilities.map((c) => `${c.name}=${c.version}`).join(',');
}

/** The capacity broadcast, for a node that offers compute. */
export function capacityService(init: CapacityInit): (components: CapacityComponents) => CapacityBroadcast {
  return (components) => new CapacityBroadcast(components, init);
}
