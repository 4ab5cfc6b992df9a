/**
 * An executor without an engine: it keeps containers as records that run until they are stopped
 * (or told to end), print what they are told to, and report what stop() was asked. The market's
 * tests drive it on the manual clock, and the simulator's hosts run their jobs on it (docs/sim.md).
 * The real executor is tested against a real engine (host-node/docker-executor.node.test.ts).
 */
import type { Clock } from '../time/clock.ts';
import { type ContainerSpec, type ContainerState, type EngineInfo, type Executor, ExecutorError, type LogLine, type LogOptions } from './executor.ts';

interface ScriptedContainer {
  readonly spec: ContainerSpec;
  state: ContainerState;
  readonly lines: LogLine[];
  readonly changed: Set<() => void>;
}

export class ScriptedExecutor implements Executor {
  readonly #clock: Clock;
  readonly containers = new Map<string, ScriptedContainer>();
  readonly stops: string[] = [];
  ready = true;
  gpus = 0;
  /** When set, run() fails with it. */
  failRun: ExecutorError | null = null;
  #next = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  async info(): Promise<EngineInfo> {
    if (!this.ready) throw new ExecutorError('no-engine', 'the scripted engine is down');
    return { engine: 'scripted 1.0', runtime: 'scripted', sandboxed: true, gpus: this.gpus };
  }

  async run(spec: ContainerSpec): Promise<string> {
    if (this.failRun !== null) throw this.failRun;
    const id = (++this.#next).toString(16).padStart(64, 'c');
    const now = this.#clock.now();
    this.containers.set(id, {
      spec,
      state: {
        id,
        name: spec.name,
        labels: spec.labels,
        status: 'running',
        running: true,
        exitCode: null,
        oomKilled: false,
        startedAtMs: now,
        finishedAtMs: null,
      },
      lines: [],
      changed: new Set(),
    });
    return id;
  }

  /** The containers that run now. */
  get running(): ContainerState[] {
    return [...this.containers.values()].filter((c) => c.state.running).map((c) => c.state);
  }

  print(id: string, stream: 'stdout' | 'stderr', text: string): void {
    const c = this.#get(id);
    c.lines.push({ stream, text, atMs: this.#clock.now() });
    this.#changed(c);
  }

  /** Ends a container as the engine would report it. */
  exit(id: string, exitCode: number, oomKilled = false): void {
    const c = this.#get(id);
    if (!c.state.running) return;
    c.state = { ...c.state, status: 'exited', running: false, exitCode, oomKilled, finishedAtMs: this.#clock.now() };
    this.#changed(c);
  }

  async stop(id: string): Promise<void> {
    this.stops.push(id);
    if (this.containers.has(id)) this.exit(id, 137);
  }

  async inspect(id: string): Promise<ContainerState | null> {
    return this.containers.get(id)?.state ?? null;
  }

  wait(id: string, options: { signal?: AbortSignal } = {}): Promise<ContainerState> {
    const c = this.#get(id);
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (c.state.running) return;
        c.changed.delete(check);
        resolve(c.state);
      };
      options.signal?.addEventListener('abort', () => {
        c.changed.delete(check);
        reject(options.signal!.reason);
      });
      c.changed.add(check);
      check();
    });
  }

  async *logs(id: string, options: LogOptions = {}): AsyncIterable<LogLine> {
    const c = this.#get(id);
    let i = 0;
    while (!options.signal?.aborted) {
      while (i < c.lines.length) yield c.lines[i++]!;
      if (!options.follow || !c.state.running) return;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          c.changed.delete(done);
          resolve();
        };
        c.changed.add(done);
        options.signal?.addEventListener('abort', done);
      });
    }
  }

  async list(labels: Readonly<Record<string, string>>): Promise<ContainerState[]> {
    return [...this.containers.values()].filter((c) => Object.entries(labels).every(([k, v]) => c.state.labels[k] === v)).map((c) => c.state);
  }

  async remove(id: string): Promise<void> {
    const c = this.containers.get(id);
    if (c === undefined) return;
    this.exit(id, 137);
    this.containers.delete(id);
  }

  #get(id: string): ScriptedContainer {
    const c = this.containers.get(id);
    if (c === undefined) throw new ExecutorError('engine-error', `no container ${id}`);
    return c;
  }

  #changed(c: ScriptedContainer): void {
    for (const fn of [...c.changed]) fn();
  }
}
