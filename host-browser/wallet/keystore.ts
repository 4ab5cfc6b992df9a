/**
 * The wallet's key, kept in this browser's IndexedDB and nowhere else: the seed and whether the
 * user has saved a backup of it. It leaves the browser only as the backup file the user exports,
 * sealed with the user's passphrase (core/crypto/sealed-identity.ts, the format of `mesh identity backup`).
 */
import { createStore, get, set, type UseStore } from 'idb-keyval';
import { SigningKey } from '../../core/crypto/ed25519.ts';
import { openIdentity, sealIdentity } from '../../core/crypto/sealed-identity.ts';

export interface WalletKey {
  readonly key: SigningKey;
  /** Whether a backup was exported (or the key came from one). */
  readonly backedUp: boolean;
}

const SEED = 'seed';
const BACKED_UP = 'backed-up';

export class KeyStore {
  readonly #db: UseStore;

  constructor(name = 'mesh-wallet') {
    this.#db = createStore(name, 'key');
  }

  /** The kept key, or null when this browser has none yet. */
  async load(): Promise<WalletKey | null> {
    const seed = await get<Uint8Array>(SEED, this.#db);
    if (seed === undefined) return null;
    return { key: SigningKey.fromSeed(new Uint8Array(seed)), backedUp: (await get<boolean>(BACKED_UP, this.#db)) === true };
  }

  /** Makes and keeps a new key (not yet backed up). */
  async create(): Promise<WalletKey> {
    const key = SigningKey.generate();
    await this.#save(key, false);
    return { key, backedUp: false };
  }

  /** Keeps the key of a backup file; IdentityFileError when the file is not one or the passphrase does not open it. */
  async import(text: string, passphrase?: string): Promise<WalletKey> {
    const key = await openIdentity(text, passphrase);
    await this.#save(key, true);
    return { key, backedUp: true };
  }

  /** The backup file of `key` sealed with `passphrase`; the caller records that it was saved with `markBackedUp`. */
  backupText(key: SigningKey, passphrase: string): Promise<string> {
    return sealIdentity(key, passphrase);
  }

  async markBackedUp(): Promise<void> {
    await set(BACKED_UP, true, this.#db);
  }

  async #save(key: SigningKey, backedUp: boolean): Promise<void> {
    await set(SEED, key.exportSeed(), this.#db);
    await set(BACKED_UP, backedUp, this.#db);
  }
}
