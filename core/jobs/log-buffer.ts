/**
 * The output of a running job on its host: lines numbered from 1 as they come, the newest kept
 * (bounded in lines and bytes, so a chatty job cannot grow the host's memory), read from a position
 * or followed. The position (`seq`) is what the log stream's event ids and a reconnect use.
 */
import type { Unsubscribe } from '../web/sse.ts';
import type { LogEvent } from './types.ts';

export const LOG_BUFFER_LINES = 10_000;
export const LOG_BUFFER_BYTES = 4 * 1024 * 1024;

export class LogBuffer {
  readonly #lines: LogEvent[] = [];
  readonly #listeners = new Set<{ line: (event: LogEvent) => void; end: () => void }>();
  #bytes = 0;
  #seq = 0;
  #ended = false;

  get ended(): boolean {
    return this.#ended;
  }

  push(stream: 'stdout' | 'stderr', text: string, at: number): void {
    if (this.#ended) return;
    const event: LogEvent = { seq: ++this.#seq, stream, text, at };
    this.#lines.push(event);
    this.#bytes += text.length;
    while (this.#lines.length > LOG_BUFFER_LINES || this.#bytes > LOG_BUFFER_BYTES) this.#bytes -= this.#lines.shift()!.text.length;
    for (const listener of this.#listeners) listener.line(event);
  }

  /** No more lines will come: followers are told. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const listener of this.#listeners) listener.end();
    this.#listeners.clear();
  }

  /** Up to `max` kept lines after position `after`. */
  after(after: number, max: number = LOG_BUFFER_LINES): LogEvent[] {
    const first = this.#lines.findIndex((line) => line.seq > after);
    return first < 0 ? [] : this.#lines.slice(first, first + max);
  }

  /** The last `n` lines. */
  tail(n: number): LogEvent[] {
    return this.#lines.slice(-n);
  }

  /** Delivers the kept lines after `after`, then each new one; `end` once the output is complete. */
  follow(after: number, line: (event: LogEvent) => void, end: () => void): Unsubscribe {
    for (const event of this.after(after)) line(event);
    if (this.#ended) {
      end();
      return () => {};
    }
    const listener = { line, end };
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
