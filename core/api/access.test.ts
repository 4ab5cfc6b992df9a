// Who is on this machine: the loopback rule of the operator's page (docs/operator.md).
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { isLoopbackAddress, requireLoopback } from './access.ts';
import { ApiProblem } from './problem.ts';

test('isLoopbackAddress: 127.0.0.0/8 and ::1, IPv4-mapped or not; nothing else', () => {
  for (const address of ['127.0.0.1', '127.255.3.4', '::1', '::ffff:127.0.0.1']) assert.isTrue(isLoopbackAddress(address), address);
  for (const address of [undefined, '', '10.0.0.1', '::ffff:10.0.0.1', '128.0.0.1', '1127.0.0.1', 'fe80::1', '::', '0.0.0.0', '127.0.0.1.evil']) {
    assert.isFalse(isLoopbackAddress(address), String(address));
  }
});

test('requireLoopback: a loopback name and a loopback client pass; any other is 403 loopback-only', () => {
  for (const origin of ['http://localhost:8844', 'http://app.localhost:8844', 'http://127.0.0.1:8844', 'http://127.9.9.9', 'http://[::1]:8844']) {
    requireLoopback(new URL(`${origin}/node`), '127.0.0.1');
  }
  const refused = (origin: string, remote: string | undefined): string => {
    try {
      requireLoopback(new URL(`${origin}/node`), remote);
    } catch (error) {
      assert.instanceOf(error, ApiProblem);
      assert.equal((error as ApiProblem).status, 403);
      return (error as ApiProblem).code;
    }
    return 'passed';
  };
  for (const origin of ['http://evil.example', 'http://localhost.evil.example', 'http://127.0.0.1.nip.io', 'http://10.0.0.2:8844', 'http://[fe80::1]']) {
    assert.equal(refused(origin, '127.0.0.1'), 'loopback-only', origin);
  }
  assert.equal(refused('http://127.0.0.1:8844', '192.168.1.9'), 'loopback-only');
  assert.equal(refused('http://127.0.0.1:8844', undefined), 'loopback-only');
});
