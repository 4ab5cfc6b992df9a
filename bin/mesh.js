#!/usr/bin/env node
// The one command-line entry of mesh. Plain JavaScript so that an old Node gets a clear message
// instead of a syntax error: the code base runs TypeScript directly, which needs Node 22.18+.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(
    `mesh needs Node.js 22.18 or later (found ${process.versions.node}). Inside the repository, \`npx mesh\` uses the Node 24 that \`npm ci\` installs.`,
  );
  process.exit(1);
}
const { main } = await import('../host-node/cli.ts');
process.exitCode = await main(process.argv.slice(2));
