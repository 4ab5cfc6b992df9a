// The shared-data loader in the browser: the test server serves ../shared/data and a stand-in upstream (web-test-runner.config.js).
import { sharedDataSuite } from '../test/shared-data-suite.ts';
import { loadSharedData } from './shared-data.ts';

const origin = globalThis.location.origin;
let caches = 0;

sharedDataSuite('shared data in the browser', {
  load: loadSharedData,
  emptyRoot: `${origin}/no-shared-data/`,
  freshCache: async () => `mesh-data-test-${Date.now()}-${++caches}`,
  upstream: (text) => `${origin}/echo/${encodeURIComponent(text)}`,
  missing: `${origin}/missing`,
});
