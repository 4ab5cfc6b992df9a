/**
 * The deepest partition of the sync tests: halves 10,000 blocks apart. Node only: it mines 20,000
 * blocks (about 25 s of its 30 s on one core) and reorganises 10,000 at once, longer than the browser
 * runner gives a test.
 */
import { test } from '../../test/harness.ts';
import { partitionHeals } from './partition.test-util.ts';

test('sync: halves that mined 10,000 blocks apart converge once they can talk again', () => partitionHeals(10_000));
