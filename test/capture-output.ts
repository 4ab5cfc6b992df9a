/** Node-only test helper: what a command run in-process writes to one of the process's streams. */

/** Runs `run` while collecting what is written to `stream` (instead of printing it). */
export async function captureOutput<T>(stream: NodeJS.WriteStream, run: () => Promise<T>): Promise<{ result: T; output: string }> {
  const write = stream.write;
  let output = '';
  stream.write = ((chunk: string | Uint8Array) => {
    output += String(chunk);
    return true;
  }) as typeof stream.write;
  try {
    return { result: await run(), output };
  } finally {
    stream.write = write;
  }
}
