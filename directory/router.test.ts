import { createDirectory } from './router.ts';
import { serviceSuite } from './testing/service-suite.ts';

// The whole suite against the router itself, no socket: the same file runs on Node and Deno.
serviceSuite('in-process', (options) => {
  const directory = createDirectory(options);
  const url = 'http://directory.test';
  return Promise.resolve({
    url,
    fetch: (input, init) => directory.fetch(new Request(input, init), { remoteAddress: 'test' }),
    close: () => directory.close(),
  });
});
