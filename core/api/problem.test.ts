import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { MEMPOOL_ERRORS } from '../chain/mempool.ts';
import { LEDGER_RULES } from '../ledger/apply.ts';
import { SIGNAL_ERRORS } from '../signal/errors.ts';
import { API_PROBLEMS, type ApiProblemCode } from './problem.ts';

test('problems: every code the node refuses with names an API problem of the same status', () => {
  const tables: Record<string, Readonly<Record<string, { problem: ApiProblemCode; status: number }>>> = { LEDGER_RULES, MEMPOOL_ERRORS, SIGNAL_ERRORS };
  for (const [name, table] of Object.entries(tables)) {
    for (const [code, rule] of Object.entries(table)) {
      assert.equal(API_PROBLEMS[rule.problem].status, rule.status, `${name} ${code}`);
    }
  }
});
