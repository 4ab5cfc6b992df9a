// JSON bodies read strictly on every POST route of the node's API: a member given twice is 400
// (JSON.parse would keep the last), and an amount or other integer written as a float (`1.0`,
// `1e3`, which JSON.parse reads as integers) is 400 naming the field.
// Web APIs only: runs on Node, Deno and Chromium.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { JSON_POST, problem, request, setup } from './api.test-util.ts';
import { BOB } from './fake-node.test-util.ts';

const ID = 'cd'.repeat(32);
const SIG = 'ab'.repeat(64);

/** Every POST route that reads a JSON body. */
const JSON_POST_ROUTES = [
  '/transfer',
  '/bond',
  '/unbond',
  '/signals/send',
  '/jobs/bid',
  `/jobs/${ID}/settle`,
  `/jobs/${ID}/expire`,
  '/mesh-deploy',
  '/mesh-kill',
  '/capabilities/revoke',
  '/trust',
  '/channels/open',
  '/channels/receipt',
  `/channels/${ID}/close`,
  `/channels/${ID}/expire`,
  '/tunnel',
  '/mesh/send',
  '/mesh/send-batch',
  '/mesh/request',
  '/mesh/reply',
  '/mesh/subscribe',
  '/mesh/publish',
  '/names/claim',
  '/profiles',
];

const post = (path: string, body: string): Request => request(path, { method: 'POST', headers: JSON_POST, body });

test('strict body: on every POST route, a member given twice is 400 naming it, before any field is looked at', async () => {
  const { api } = setup();
  for (const path of JSON_POST_ROUTES) {
    for (const [body, name] of [
      ['{"x":1,"x":1}', 'x'],
      ['{"to":"a","nested":{"k":[{"v":1,"v":2}]}}', 'nested.k.0.v'],
    ] as const) {
      const answer = await problem(await api(post(path, body)), 400);
      assert.equal(answer.type, '/problems/invalid-body', path);
      assert.deepEqual(answer.errors, [{ name, detail: 'given more than once' }], path);
    }
  }
});

test('strict body: /transfer with two amounts is refused, not paid with the last', async () => {
  const { api, node } = setup();
  const answer = await problem(await api(post('/transfer', `{"to":"${BOB}","amount":"1","amount":"1000"}`)), 400);
  assert.equal(answer.detail, 'amount: given more than once');
  assert.equal(answer.type, '/problems/invalid-body');
  assert.deepEqual(node.ledger.transfers, [], 'nothing reached the node');
  assert.equal((await api(post('/transfer', `{"to":"${BOB}","amount":"1000"}`))).status, 201);
  assert.deepEqual(node.ledger.transfers, [{ to: BOB, amount: 1000n }]);
});

/** Each amount field with a body around it: `$` stands for the amount's JSON text. */
const AMOUNT_BODIES: [string, string, string][] = [
  ['/transfer', 'amount', `{"to":"${BOB}","amount":$}`],
  ['/bond', 'amount', '{"amount":$}'],
  ['/unbond', 'amount', '{"amount":$}'],
  ['/jobs/bid', 'bid', '{"image":"localhost/busybox","cpu_cores":1,"mem_mb":64,"duration_secs":10,"bid":$}'],
  ['/mesh-deploy', 'bid', `{"node_id":"${BOB}","image":"localhost/busybox","cpu_cores":1,"mem_mb":64,"duration_secs":10,"bid":$}`],
  [`/jobs/${ID}/settle`, 'cost', `{"cost":$,"payer_sig":"${SIG}"}`],
  ['/channels/open', 'capacity', `{"host":"${BOB}","capacity":$}`],
  ['/channels/receipt', 'cumulative', `{"channel_id":"${ID}","host":"${BOB}","cumulative":$}`],
  [`/channels/${ID}/close`, 'cumulative', `{"cumulative":$,"payer_sig":"${SIG}"}`],
];

test('strict body: an amount written as a float in any form is 400 naming it; the same amount as an integer or a string is taken', async () => {
  const { api } = setup();
  for (const [path, field, template] of AMOUNT_BODIES) {
    for (const float of ['1.0', '1000.00', '1e3', '1E3', '1e+3', '10e-1', '1.5', '-1.0', '0.0']) {
      const answer = await problem(await api(post(path, template.replace('$', float))), 400);
      assert.equal(answer.type, '/problems/invalid-body', `${path} ${float}`);
      assert.deepEqual(
        (answer.errors as { name: string }[]).map((e) => e.name),
        [field],
        `${path} ${float}: ${answer.detail}`,
      );
    }
    for (const whole of ['1000', '"1000"']) {
      const answer = await api(post(path, template.replace('$', whole)));
      const text = await answer.text();
      assert.notInclude(text, '/problems/invalid-body', `${path} ${whole}: ${text}`);
    }
  }
});

test('strict body: integer fields refuse 1.0 and 1e3 too', async () => {
  const { api } = setup();
  const names = async (path: string, body: string): Promise<string[]> =>
    ((await problem(await api(post(path, body)), 400)).errors as { name: string }[]).map((e) => e.name);
  for (const float of ['64.0', '6.4e1']) {
    assert.deepEqual(await names('/jobs/bid', `{"image":"localhost/busybox","cpu_cores":1,"mem_mb":${float},"duration_secs":10,"bid":"1"}`), ['mem_mb']);
    assert.deepEqual(await names('/jobs/bid', `{"image":"localhost/busybox","cpu_cores":1,"mem_mb":64,"duration_secs":${float},"bid":"1"}`), ['duration_secs']);
  }
  assert.deepEqual(await names('/jobs/bid', '{"image":"localhost/busybox","cpu_cores":1e0,"mem_mb":64,"duration_secs":10,"bid":"1"}'), ['cpu_cores']);
  assert.deepEqual(await names('/channels/open', `{"host":"${BOB}","capacity":"5","expiry_height":1e2}`), ['expiry_height']);
  assert.deepEqual(await names('/mesh/request', `{"to":"${BOB}","topic":"t","payload_hex":"","timeout_ms":1000.0}`), ['timeout_ms']);
  // Nested: the member is judged where it stands.
  assert.deepEqual(await names('/signals/send', '{"to":"broadcast","capabilities":[{"name":"gpu","version":2},{"name":"cpu","version":1.0}]}'), [
    'capabilities.1.version',
  ]);
  assert.equal((await api(post('/signals/send', '{"to":"broadcast","capabilities":[{"name":"gpu","version":2}]}'))).status, 202);
});
