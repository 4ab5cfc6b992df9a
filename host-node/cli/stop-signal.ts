/**
 * How a long-running command (`mesh node`, `mesh directory`) learns it should stop: the first
 * SIGINT or SIGTERM, heard from the moment `stopSignal()` is called. Calling it before starting
 * means a signal that comes while the service is still starting stops it cleanly once started,
 * instead of killing it half-way. A second signal exits at once (130).
 */
export function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const force = (): never => process.exit(130);
    const first = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', first);
      process.off('SIGTERM', first);
      process.once('SIGINT', force);
      process.once('SIGTERM', force);
      resolve(signal);
    };
    process.on('SIGINT', first);
    process.on('SIGTERM', first);
  });
}

/**
 * Runs `work` with a signal that the first SIGINT or SIGTERM aborts, for a command that follows a
 * stream until interrupted and then ends cleanly (exit 0).
 */
export async function untilInterrupted<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const interrupted = new AbortController();
  const onSignal = (): void => interrupted.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await work(interrupted.signal);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
