import { MemorySubmissionStore } from './store.ts';
import { storeSuite } from './store-suite.ts';

storeSuite('MemorySubmissionStore', () => Promise.resolve({ store: new MemorySubmissionStore() }));
