#!/usr/bin/env node
// The one command-line entry of mesh, run by bin/mesh (the command on the PATH) or as
// `node bin/mesh.js`. Plain JavaScript so that an old Node gets a clear message instead of a syntax
// error: the code base runs TypeScript directly, which needs Node 22.18+.
import module from 'node:module';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(
    `mesh needs Node.js 22.18 or later (found ${process.versions.node}). \`mesh\` (bin/mesh, or \`npx mesh\` in the repository) uses the Node 24 that \`npm ci\` installs.`,
  );
  process.exit(1);
}
// V8's compiled code of the modules, kept between runs (in os.tmpdir()/node-compile-cache unless
// NODE_COMPILE_CACHE says where): a command then starts in about a third of the CPU time.
module.enableCompileCache();
// The simulator (mesh sim, mesh bench sim) holds every node in this one process: a thousand nodes
// take about 9 GiB of heap at their cold start, past Node's default limit of about 4 GiB. bin/mesh
// raises it; a launcher that runs this file itself (npx's own link to it) gets it here, in a child.
const [command] = process.argv.slice(2);
const heapLimit = (await import('node:v8')).getHeapStatistics().heap_size_limit;
if ((command === 'sim' || command === 'bench') && heapLimit < 8 * 2 ** 30 && !/max-old-space-size/.test(process.env.NODE_OPTIONS ?? '')) {
  const { spawnSync } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const child = spawnSync(process.execPath, ['--max-old-space-size=16384', fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(child.status ?? 1);
}
const { main } = await import('../host-node/cli.ts');
process.exitCode = await main(process.argv.slice(2));
