// The STUN Binding answer: the mapped address comes back XORed as RFC 8489 says (checked against
// the RFC 5769 sample), and anything that is not a plain Binding request gets no answer. Runs on
// Node, Deno and Chromium.
import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../../test/harness.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { MAX_STUN_REQUEST_BYTES, parseStunUrl, stunBindingAnswer, stunBindingRequest, stunMappedAddress } from './stun.ts';

const txid = fromHex('b7e7a701bc34d686fa87dfae', 12);

test('stun: a Binding request is answered with its source as XOR-MAPPED-ADDRESS (RFC 5769 §2.2 values)', () => {
  const answer = stunBindingAnswer(stunBindingRequest(txid), { address: '192.0.2.1', port: 32853 });
  assert.isNotNull(answer);
  // Success, 12 bytes of attributes, the cookie and transaction id, then the attribute of RFC 5769 §2.2.
  assert.equal(toHex(answer!), `0101000c2112a442${toHex(txid)}002000080001a147e112a643`);
  assert.deepEqual(stunMappedAddress(answer!), { address: '192.0.2.1', port: 32853 });
});

test('stun: an IPv6 source is XORed with the cookie and the transaction id (RFC 5769 §2.3 values)', () => {
  const answer = stunBindingAnswer(stunBindingRequest(txid), { address: '2001:db8:1234:5678:11:2233:4455:6677', port: 32853 });
  assert.equal(toHex(answer!.subarray(20)), '002000140002a1470113a9faa5d3f179bc25f4b5bed2b9d9');
  assert.deepEqual(stunMappedAddress(answer!), { address: '2001:db8:1234:5678:11:2233:4455:6677', port: 32853 });
  const mapped = stunBindingAnswer(stunBindingRequest(txid), { address: '::ffff:198.18.0.7', port: 9 });
  assert.deepEqual(stunMappedAddress(mapped!), { address: '198.18.0.7', port: 9 });
});

test('stun: optional attributes (SOFTWARE, FINGERPRINT) are skipped, a required one is not answered', () => {
  const withAttributes = (type: number, value: Uint8Array): Uint8Array => {
    const padded = Math.ceil(value.length / 4) * 4;
    const request = new Uint8Array(20 + 4 + padded);
    request.set(stunBindingRequest(txid));
    const view = new DataView(request.buffer);
    view.setUint16(2, 4 + padded);
    view.setUint16(20, type);
    view.setUint16(22, value.length);
    request.set(value, 24);
    return request;
  };
  assert.isNotNull(stunBindingAnswer(withAttributes(0x8022, new TextEncoder().encode('libjuice')), { address: '198.18.0.1', port: 1 }));
  assert.isNotNull(stunBindingAnswer(withAttributes(0x8028, new Uint8Array(4)), { address: '198.18.0.1', port: 1 }));
  // USERNAME is comprehension-required: a plain server does not take part in ICE's checks.
  assert.isNull(stunBindingAnswer(withAttributes(0x0006, new Uint8Array(5)), { address: '198.18.0.1', port: 1 }));
});

test('stun: what is not a well-formed Binding request gets no answer', () => {
  const request = stunBindingRequest(txid);
  const from = { address: '198.18.0.1', port: 1 };
  const variant = (at: number, value: number): Uint8Array => {
    const copy = request.slice();
    copy[at] = value;
    return copy;
  };
  assert.isNull(stunBindingAnswer(request.subarray(0, 19), from), 'short');
  assert.isNull(stunBindingAnswer(variant(1, 0x11), from), 'another method');
  assert.isNull(stunBindingAnswer(variant(4, 0), from), 'no magic cookie (RFC 3489)');
  assert.isNull(stunBindingAnswer(variant(3, 4), from), 'a length past the datagram');
  assert.isNull(stunBindingAnswer(new Uint8Array(MAX_STUN_REQUEST_BYTES + 4), from), 'oversized');
  assert.isNull(stunBindingAnswer(request, { address: 'not-an-ip', port: 1 }), 'an unparsable source');
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
      const answer = stunBindingAnswer(bytes, from);
      // Whatever comes in, an answer is a Binding success no longer than 44 bytes.
      if (answer !== null) assert.isAtMost(answer.length, 44);
    }),
  );
});

test('stun: server URLs are stun:HOST[:PORT]', () => {
  assert.equal(parseStunUrl('stun:198.18.0.1:3478'), 'stun:198.18.0.1:3478');
  assert.equal(parseStunUrl('stun:stun.example.org'), 'stun:stun.example.org:3478');
  assert.equal(parseStunUrl('stun:[2001:db8::1]:19302'), 'stun:[2001:db8::1]:19302');
  for (const bad of ['198.18.0.1:3478', 'turn:198.18.0.1:3478', 'stun:', 'stun:host:0', 'stun:host:70000', 'stun:a b']) {
    assert.throws(() => parseStunUrl(bad), RangeError, undefined, bad);
  }
});
