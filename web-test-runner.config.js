// Runs the same *.test.ts files as Node and Deno, in Debian's headless Chromium.
import { esbuildPlugin } from '@web/dev-server-esbuild';
import { playwrightLauncher } from '@web/test-runner-playwright';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './test/chromium.ts';

export default {
  // The directory's data layer (records, index, importers) is runtime-neutral too; its service
  // suite needs sockets and runs on Node and Deno.
  files: [
    'core/**/*.test.ts',
    'directory/{record,dataset,text,postings,search}.test.ts',
    'directory/import/*.test.ts',
    '!**/*.node.test.ts',
  ],
  nodeResolve: true,
  concurrency: 1,
  testFramework: { config: { timeout: 60000 } },
  testsFinishTimeout: 600000,
  plugins: [esbuildPlugin({ ts: true, target: 'es2023' })],
  browsers: [
    playwrightLauncher({
      product: 'chromium',
      launchOptions: { executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] },
    }),
  ],
};
