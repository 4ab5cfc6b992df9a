/**
 * The lifecycle every service of a node shares, as js-libp2p's `Startable`: a node starts its
 * services phase by phase, each phase over all of them in the order they were listed, and stops
 * them phase by phase in the reverse order. A phase a service does not need is left out.
 *
 * - `beforeStart`: open what the service keeps (stores) and register handlers; no work yet.
 * - `start`: begin its own work (timers, subscriptions to the chain).
 * - `afterStart`: work that needs every other service started (sync, block production, first
 *   announcements).
 * - `beforeStop`: stop taking new work.
 * - `stop`: end timers and subscriptions, wait for work in flight, close what it opened.
 */
export interface Startable {
  beforeStart?(): void | Promise<void>;
  start?(): void | Promise<void>;
  afterStart?(): void | Promise<void>;
  beforeStop?(): void | Promise<void>;
  stop?(): void | Promise<void>;
}

const STARTING = ['beforeStart', 'start', 'afterStart'] as const;
const STOPPING = ['beforeStop', 'stop'] as const;

function isStartable(value: unknown): value is Startable {
  return (
    typeof value === 'object' && value !== null && [...STARTING, ...STOPPING].some((phase) => typeof (value as Record<string, unknown>)[phase] === 'function')
  );
}

/**
 * Runs the start phases over `services` in order. A failing phase stops them all again (stopping
 * one that never started does nothing), then throws; a failure while stopping goes to `log`.
 */
export async function startAll(services: readonly unknown[], log: (line: string) => void = () => {}): Promise<void> {
  const startables = services.filter(isStartable);
  try {
    for (const phase of STARTING) for (const service of startables) await service[phase]?.();
  } catch (error) {
    await stopAll(services).catch((e: unknown) => log(`stopping after a failed start: ${String(e)}`));
    throw error;
  }
}

/**
 * Runs the stop phases over `services` in reverse order. Every service is asked to stop even when
 * another fails; the first failure is thrown at the end.
 */
export async function stopAll(services: readonly unknown[]): Promise<void> {
  const startables = services.filter(isStartable).reverse();
  let failure: unknown = null;
  for (const phase of STOPPING) {
    for (const service of startables) {
      try {
        await service[phase]?.();
      } catch (error) {
        failure ??= error;
      }
    }
  }
  if (failure !== null) throw failure;
}
