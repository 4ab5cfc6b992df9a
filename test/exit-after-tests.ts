/**
 * Loaded into every Node test process (`--import`, package.json "test:node"): a test file whose
 * process is still running 30 s after its last test fails, naming what keeps it alive, instead of
 * holding the whole run (its own after hooks have that long to finish). node:test's --test-timeout bounds tests, not the process after them.
 */
import { after } from 'node:test';

export const LINGER_MS = 60_000;

after(() => {
  setTimeout(() => {
    process.stderr.write(
      `this test file's process was still running ${LINGER_MS / 1000} s after its tests; active: ${process.getActiveResourcesInfo().join(', ')}\n`,
    );
    process.exit(1);
  }, LINGER_MS).unref();
});
