import { assert } from 'chai';
import { rejectsAsync } from '../../test/assert.ts';
import { test } from '../../test/harness.ts';
import { fromHex, toHex } from '../encoding/hex.ts';
import { SigningKey } from './ed25519.ts';
import { IdentityFileError, identityFileText } from './identity-file.ts';
import { BACKUP_KDF, isSealedBackup, openIdentity, sealIdentity } from './sealed-identity.ts';

const key = SigningKey.fromSeed(fromHex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60'));
// A cheap derivation for the cases that are not about its cost.
const kdf = { memoryKib: 64, iterations: 1, parallelism: 1 };
const PASS = 'correct horse battery';

test('sealed backup: the default Argon2id cost round-trips; the seed is not in the file and the node_id is', async () => {
  const text = await sealIdentity(key, PASS);
  const file = JSON.parse(text);
  assert.deepEqual(Object.keys(file), ['type', 'version', 'node_id', 'sealed']);
  assert.equal(file.type, 'mesh-identity');
  assert.equal(file.version, 2);
  assert.equal(file.node_id, toHex(key.publicKey));
  assert.notInclude(text, toHex(key.exportSeed()));
  assert.isTrue(isSealedBackup(text));
  // The parameters are written in the file: format 1, 64 MiB, 3 passes, 4 lanes.
  assert.equal(file.sealed.slice(0, 20), `01${(BACKUP_KDF.memoryKib >>> 0).toString(16).padStart(8, '0')}0000000304`);
  assert.equal(toHex((await openIdentity(text, PASS)).publicKey), toHex(key.publicKey));
});

test('sealed backup: a wrong or missing passphrase is refused with its own code', async () => {
  const text = await sealIdentity(key, PASS, { kdf });
  await rejectsAsync(() => openIdentity(text, 'correct horse battery.'), IdentityFileError, 'identity-passphrase');
  await rejectsAsync(() => openIdentity(text), IdentityFileError, 'identity-passphrase');
  await rejectsAsync(() => openIdentity(text, ''), IdentityFileError, 'identity-passphrase');
});

test('sealed backup: two seals of one key differ (fresh salt and nonce), both open', async () => {
  const [a, b] = [await sealIdentity(key, PASS, { kdf }), await sealIdentity(key, PASS, { kdf })];
  assert.notEqual(JSON.parse(a).sealed, JSON.parse(b).sealed);
  for (const text of [a, b]) assert.equal(toHex((await openIdentity(text, PASS)).publicKey), toHex(key.publicKey));
});

test('sealed backup: the stated node_id and the cost parameters cannot be changed without the passphrase failing', async () => {
  const file = JSON.parse(await sealIdentity(key, PASS, { kdf }));
  const other = { ...file, node_id: toHex(SigningKey.fromSeed(new Uint8Array(32).fill(7)).publicKey) };
  await rejectsAsync(() => openIdentity(JSON.stringify(other), PASS), IdentityFileError, 'identity-passphrase');
  // One more pass than written: still within bounds, so it is derived, and the tag fails.
  const passes = `${file.sealed.slice(0, 10)}00000002${file.sealed.slice(18)}`;
  await rejectsAsync(() => openIdentity(JSON.stringify({ ...file, sealed: passes }), PASS), IdentityFileError, 'identity-passphrase');
  const flipped = `${file.sealed.slice(0, -2)}${file.sealed.endsWith('00') ? '01' : '00'}`;
  await rejectsAsync(() => openIdentity(JSON.stringify({ ...file, sealed: flipped }), PASS), IdentityFileError, 'identity-passphrase');
});

test('sealed backup: a file asking for more memory or passes than a reader gives is refused before deriving', async () => {
  const file = JSON.parse(await sealIdentity(key, PASS, { kdf }));
  const greedy = `01ffffffff${file.sealed.slice(10)}`;
  await rejectsAsync(() => openIdentity(JSON.stringify({ ...file, sealed: greedy }), PASS), IdentityFileError, 'identity-sealed');
  const format = `02${file.sealed.slice(2)}`;
  await rejectsAsync(() => openIdentity(JSON.stringify({ ...file, sealed: format }), PASS), IdentityFileError, 'identity-sealed');
  await rejectsAsync(() => openIdentity(JSON.stringify({ ...file, sealed: file.sealed.slice(2) }), PASS), IdentityFileError, 'identity-hex');
});

test('sealed backup: a passphrase under 8 characters is refused; composed and decomposed accents are one passphrase', async () => {
  await rejectsAsync(() => sealIdentity(key, 'short', { kdf }), IdentityFileError, 'identity-passphrase');
  const text = await sealIdentity(key, 'caf\u00e9 au lait', { kdf });
  assert.equal(toHex((await openIdentity(text, 'cafe\u0301 au lait')).publicKey), toHex(key.publicKey));
});

test('sealed backup: a version 1 file in the clear still opens, without a passphrase', async () => {
  const plain = identityFileText(key);
  assert.isFalse(isSealedBackup(plain));
  assert.equal(toHex((await openIdentity(plain)).publicKey), toHex(key.publicKey));
});
