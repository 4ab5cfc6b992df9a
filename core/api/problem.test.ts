import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { CAPABILITY_ERRORS, GRANT_ERRORS } from '../capabilities/errors.ts';
import { MEMPOOL_ERRORS } from '../chain/mempool.ts';
import { CHANNEL_ERRORS } from '../channels/errors.ts';
import { JOB_ERRORS } from '../jobs/errors.ts';
import { LEDGER_RULES } from '../ledger/apply.ts';
import { InvalidBlockError } from '../ledger/block.ts';
import { MESSAGING_ERRORS } from '../messaging/errors.ts';
import { NAME_ERRORS } from '../names/errors.ts';
import { NETWORK_ERRORS, PeerUnreachableError, RelayedOnlyError, RequestTimeoutError } from '../net/errors.ts';
import { PLACEMENT_ERRORS } from '../placement/errors.ts';
import { SIGNAL_ERRORS } from '../signal/errors.ts';
import { TUNNEL_ERRORS } from '../tunnel/errors.ts';
import { API_PROBLEMS, type ApiProblemCode, toProblem } from './problem.ts';

test('problems: every code the node refuses with names an API problem of the same status', () => {
  const tables: Record<string, Readonly<Record<string, { problem: ApiProblemCode; status: number }>>> = {
    LEDGER_RULES,
    MEMPOOL_ERRORS,
    SIGNAL_ERRORS,
    NETWORK_ERRORS,
    JOB_ERRORS,
    CAPABILITY_ERRORS,
    GRANT_ERRORS,
    CHANNEL_ERRORS,
    PLACEMENT_ERRORS,
    TUNNEL_ERRORS,
    MESSAGING_ERRORS,
    NAME_ERRORS,
  };
  for (const [name, table] of Object.entries(tables)) {
    for (const [code, rule] of Object.entries(table)) {
      assert.equal(API_PROBLEMS[rule.problem].status, rule.status, `${name} ${code}`);
    }
  }
});

test("problems: any ruled error with an API problem is answered by its table, the network port's too", () => {
  const timeout = toProblem(new RequestTimeoutError('ab', '/mesh/rpc/1/x', 50));
  assert.equal(timeout?.status, 504);
  assert.equal(timeout?.code, 'peer-timeout');
  assert.deepEqual(timeout?.extra, { rule: 'timeout' });
  assert.match(timeout?.message ?? '', /may still have processed/);
  assert.equal(toProblem(new PeerUnreachableError('gone'))?.status, 502);
  // Bulk work to a peer reached only through a relay says why it waits (job logs, a tunnel).
  const relayed = toProblem(new RelayedOnlyError('ab is reached only through a relay, and /mesh/rpc/1/jobs.logs runs on direct connections only'));
  assert.deepEqual([relayed?.status, relayed?.code, relayed?.extra], [503, 'peer-relayed', { rule: 'relayed-only' }]);
  // Errors without an API problem (a block rule is gossip's concern only) are left to the kit's 500.
  assert.isUndefined(toProblem(new InvalidBlockError('bad-block-signature', 'no')));
  assert.isUndefined(toProblem(new Error('boom')));
});
