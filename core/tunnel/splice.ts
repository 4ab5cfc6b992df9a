/**
 * Joins two duplexes back to back, the way a tunnel joins a TCP connection to a peer stream: what
 * one side reads the other writes, in both directions at once. Half-close is kept: when one side's
 * reading ends (its peer's FIN), the other side's writing is closed after the last byte, and the
 * other direction goes on. A reset or an error on either side resets both at once.
 */
import type { Duplex } from '../net/duplex.ts';

/** How a spliced pair ended: null when both directions closed cleanly, else what broke it. */
export type SpliceEnd = Error | null;

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/** Carries bytes between `a` and `b` until both directions are closed, or either breaks. */
export async function splice(a: Duplex, b: Duplex): Promise<SpliceEnd> {
  let broken: Error | null = null;
  const breakBoth = (error: unknown): void => {
    if (broken !== null) return;
    broken = asError(error);
    a.reset(broken);
    b.reset(broken);
  };
  const pump = async (from: Duplex, to: Duplex): Promise<void> => {
    try {
      for await (const chunk of from) await to.write(chunk);
      await to.closeWrite();
    } catch (error) {
      breakBoth(error);
    }
  };
  // A reset shows on `closed` at once, even while neither direction is moving.
  a.closed.catch(breakBoth);
  b.closed.catch(breakBoth);
  await Promise.all([pump(a, b), pump(b, a)]);
  if (broken === null) await Promise.all([a.closed, b.closed]).catch(breakBoth);
  return broken;
}
