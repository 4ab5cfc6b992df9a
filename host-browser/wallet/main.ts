/**
 * The wallet page: a light node in the page (light-node.ts) and a key kept in IndexedDB
 * (keystore.ts). Every signature is made here; the host that served the page only serves files and
 * its config (docs/browser.md).
 */
import qrcode from 'qrcode-generator';
import { IdentityFileError } from '../../core/crypto/identity-file.ts';
import { checkPassphrase, isSealedBackup } from '../../core/crypto/sealed-identity.ts';
import { formatCredits } from '../../core/encoding/amount.ts';
import { fromHex, toHex } from '../../core/encoding/hex.ts';
import { type ChainParams, devnet, LIGHT_RETENTION_BLOCKS, MAINNET } from '../../core/ledger/params.ts';
import { freeBalance, lockedBond } from '../../core/ledger/state.ts';
import { CheckpointRefusedError } from '../../core/node/light-start.ts';
import type { MeshNode } from '../../core/node/node.ts';
import { SegmentError } from '../../core/node/segments.ts';
import { deleteChainStore, holdsChain, LightNode } from '../light-node.ts';
import { KeyStore, type WalletKey } from './keystore.ts';
import { checkSend } from './send-check.ts';

/** What the host that serves the page says (GET /wallet/config.json). */
interface WalletConfig {
  network: string;
  block_interval_ms: number;
  checkpoint: { height: number; hash: string };
  hosts: string[];
}

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page lacks #${id}`);
  return element as T;
};
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const credits = (value: bigint): string => formatCredits(value);

const keys = new KeyStore();
let wallet: WalletKey | null = null;
let light: LightNode | null = null;
const HISTORY_ROWS = 50;
let wantsReceive = false;
// The height a catch-up began at, for its progress bar; null while synced.
let syncFrom: number | null = null;
// The serving host's checkpoint: a chain that holds another block at its height is not the host's chain.
let hostCheckpoint: { height: number; hash: string } | null = null;
// Set once the held chain is found not to connect to the host's: the page stops showing it as usable.
let stale = false;
// Since when every peer's tip has been on another chain (null: not now), and how long that may last.
let apartSince: number | null = null;
const APART_MS = 10_000;
const loadedAt = performance.now();
// Libp2p dials the hosts in the first moments of a load: no "Offline" before this.
const CONNECT_GRACE_MS = 1_500;

function setStatus(state: string, text: string, progress?: number): void {
  const status = $('status');
  status.dataset.state = state;
  status.textContent = text;
  const bar = $<HTMLProgressElement>('progress');
  bar.hidden = progress === undefined;
  if (progress !== undefined) bar.value = progress;
}

/** The error banner with `text` and its actions (Retry reloads the page; reset drops the chain store), or none. */
function showError(text: string | null, actions: { retry?: boolean; reset?: boolean } = {}): void {
  $('error').hidden = text === null;
  $('error-text').textContent = text ?? '';
  $('retry').hidden = actions.retry !== true;
  $('reset-chain').hidden = actions.reset !== true;
  // Nothing may be sent while the page cannot trust what it shows.
  if (text !== null) $('send-card').hidden = true;
}

function say(id: string, kind: 'ok' | 'error' | 'info', text: string): void {
  const element = $(id);
  element.dataset.kind = kind;
  element.textContent = text;
}

/** The serving host's config, and the same with `?checkpoint=` and `?host=` pinned over it (null when nothing is pinned). */
async function loadConfig(): Promise<{ host: WalletConfig; pinned: WalletConfig | null }> {
  const response = await fetch('/wallet/config.json', { cache: 'no-store' });
  if (!response.ok) throw new Error(`the host did not give the wallet's config (HTTP ${response.status})`);
  const host = (await response.json()) as WalletConfig;
  const query = new URLSearchParams(location.search);
  const checkpoint = query.get('checkpoint');
  const hosts = query.getAll('host');
  if (checkpoint === null && hosts.length === 0) return { host, pinned: null };
  return {
    host,
    pinned: {
      ...host,
      checkpoint: checkpoint === null ? host.checkpoint : { height: Number(query.get('checkpoint_height') ?? 0), hash: checkpoint },
      hosts: hosts.length > 0 ? hosts : host.hosts,
    },
  };
}

/** Shows what the URL pins and resolves true when the user starts from it, false for the host's own config. */
function confirmPinned(pinned: WalletConfig): Promise<boolean> {
  $('pin-height').textContent = String(pinned.checkpoint.height);
  $('pin-hash').textContent = pinned.checkpoint.hash;
  $('pin-hosts').replaceChildren(
    ...pinned.hosts.map((h) => {
      const item = document.createElement('li');
      item.textContent = h;
      return item;
    }),
  );
  // The key is chosen: the onboarding (and what it last said) gives way to the question.
  $('onboard').hidden = true;
  $('pin-card').hidden = false;
  setStatus('starting', 'Confirm the pinned checkpoint');
  $('pin-accept').focus();
  return new Promise((resolve) => {
    const done = (accept: boolean): void => {
      $('pin-card').hidden = true;
      resolve(accept);
    };
    $('pin-accept').addEventListener('click', () => done(true), { once: true });
    $('pin-reject').addEventListener('click', () => done(false), { once: true });
  });
}

function paramsOf(config: WalletConfig): ChainParams {
  if (config.network === MAINNET.network) return MAINNET;
  if (config.network === devnet().network) return devnet(config.block_interval_ms);
  throw new Error(`this wallet does not know the network ${config.network}`);
}

// ---- the key ----

function downloadBackup(key: WalletKey, text: string): void {
  const blob = new Blob([text], { type: 'application/json' });
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = `mesh-wallet-${toHex(key.key.publicKey).slice(0, 12)}.json`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

async function exportBackup(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  if (wallet === null) return;
  const pass = $<HTMLInputElement>('backup-pass');
  const again = $<HTMLInputElement>('backup-pass2');
  for (const input of [pass, again]) input.removeAttribute('aria-invalid');
  const refuse = (input: HTMLInputElement, message: string): void => {
    input.setAttribute('aria-invalid', 'true');
    input.focus();
    say('backup-message', 'error', message);
  };
  try {
    checkPassphrase(pass.value);
  } catch (error) {
    return refuse(pass, `Not saved: ${messageOf(error)}.`);
  }
  if (again.value !== pass.value) return refuse(again, 'Not saved: the two passphrases differ.');
  const button = $<HTMLButtonElement>('export');
  button.disabled = true;
  say('backup-message', 'ok', 'Sealing the backup…');
  try {
    downloadBackup(wallet, await keys.backupText(wallet.key, pass.value));
  } finally {
    button.disabled = false;
  }
  pass.value = '';
  again.value = '';
  await keys.markBackedUp();
  wallet = { ...wallet, backedUp: true };
  say('backup-message', 'ok', 'Backup file saved. Keep it, and its passphrase, private and apart.');
  renderReceive();
}

function renderReceive(): void {
  const backedUp = wallet?.backedUp === true;
  $('backup-ask').hidden = !(wantsReceive && !backedUp);
  $('receive-box').hidden = !(wantsReceive && backedUp);
  // Once asked, the button has done its work: the backup request or the NodeId stands in its place.
  $('receive-show').hidden = wantsReceive;
  if (wantsReceive && backedUp && wallet !== null) {
    const id = toHex(wallet.key.publicKey);
    if ($('node-id').textContent !== id) {
      $('node-id').textContent = id;
      const qr = qrcode(0, 'M');
      qr.addData(id);
      qr.make();
      // An image from a data: URL, not markup: the page's policy allows no inline HTML building.
      const image = document.createElement('img');
      image.src = qr.createDataURL(6, 2);
      image.alt = 'QR code of your NodeId';
      $('qr').replaceChildren(image);
    }
  }
}

// ---- the chain ----

/** Credits this wallet's pooled transactions move: what it sends and what it is sent, not yet in a block. */
function pendingOf(node: MeshNode, self: string): { in: bigint; out: bigint } {
  let incoming = 0n;
  let outgoing = 0n;
  for (const tx of node.mempool.pending()) {
    if (tx.body.kind !== 'Transfer') continue;
    if (toHex(tx.body.sender) === self) outgoing += tx.body.amount;
    else if (toHex(tx.body.to) === self) incoming += tx.body.amount;
  }
  return { in: incoming, out: outgoing };
}

/** The last send, until the history shows it in a block. */
let lastSend: { id: string; amount: bigint } | null = null;

/** A counterparty as a person knows it: the names it holds on the chain, then its NodeId. */
function whoIs(node: MeshNode, nodeId: string, height: number): string {
  const names = node.chain.state
    .namesOf(fromHex(nodeId))
    .filter(([, entry]) => entry.expires > height)
    .map(([name]) => name);
  return names.length === 0 ? nodeId : `${names.join(', ')} (${nodeId})`;
}

/** What the send form lets this wallet spend: the free balance less the pending sends. */
function freeNow(node: MeshNode, self: Uint8Array): bigint {
  const height = node.chain.tip.height;
  const free = freeBalance(node.chain.state.account(self), height) - pendingOf(node, toHex(self)).out;
  return free > 0n ? free : 0n;
}

async function render(): Promise<void> {
  if (light === null || wallet === null) return;
  const node = light.node;
  const self = wallet.key.publicKey;
  const selfHex = toHex(self);
  const tip = node.chain.tip.height;
  const peers = light.network.peers().length;
  const target = light.targetHeight();
  // The pill is a live region: it names the state and the peers, not each new height (the balance card shows that).
  const peerCount = `${peers} peer${peers === 1 ? '' : 's'}`;
  const tips = await light.peerTips();
  // Peers on another chain and none on ours: a race between two blocks settles within seconds; this does not.
  const apart = tips.other && !tips.held && !tips.ahead;
  apartSince = apart ? (apartSince ?? performance.now()) : null;
  const hostApart = hostCheckpoint !== null && (await light.checkpointOnChain(hostCheckpoint.height, hostCheckpoint.hash)) === 'other';
  if (!stale && (hostApart || (apartSince !== null && performance.now() - apartSince >= APART_MS))) {
    stale = true;
    setStatus('error', 'On another chain');
    showError(
      `This browser holds a chain that does not connect to its hosts' chain${hostApart ? ` (the host's block ${hostCheckpoint!.height} is not the one held here)` : ''}: the hosts were reset, or this browser followed a fork. ` +
        "Reset the chain store to start again from the host's checkpoint; your key stays in this browser.",
      { reset: true },
    );
  }
  if (stale) {
    // The error stands: nothing below is shown as current.
  } else if (peers === 0) {
    if (performance.now() - loadedAt < CONNECT_GRACE_MS) setStatus('starting', 'Connecting to the mesh…');
    else setStatus('offline', 'Offline: no host reachable, retrying');
  } else if (target > tip || tips.ahead) {
    syncFrom ??= tip;
    setStatus('syncing', `Syncing block ${tip} of ${target} · ${peerCount}`, target === syncFrom ? 1 : (tip - syncFrom) / (target - syncFrom));
  } else if (tips.held) {
    // Synced: a peer announced a tip this browser holds.
    syncFrom = null;
    setStatus('synced', `Synced · ${peerCount}`);
  } else {
    setStatus('syncing', `Checking the chain with peers · ${peerCount}`);
  }

  const account = node.chain.state.account(self);
  const pending = pendingOf(node, selfHex);
  const locked = account.locked_bids + account.locked_channels + lockedBond(account, tip);
  $('balance').textContent = credits(account.balance);
  $('pending').textContent = pending.in === 0n && pending.out === 0n ? 'none' : `+${credits(pending.in)} / −${credits(pending.out)}`;
  $('free').textContent = credits(freeNow(node, self));
  $('locked').textContent = credits(locked);
  $('height').textContent = String(tip);
  $('balance-note').textContent = stale
    ? 'From the chain held here, which the hosts do not follow: it may not be your balance on theirs.'
    : target > tip
      ? 'Catching up: the balance is the one at the height shown and may change.'
      : '';

  const rows = await node.services.ledger.transactions(self, { limit: HISTORY_ROWS });
  const list = $('history-list');
  list.replaceChildren(
    ...rows.map((row) => {
      const item = document.createElement('li');
      const incoming = row.direction === 'in';
      const what = document.createElement('span');
      what.textContent = `${row.kind}${row.counterparty ? (incoming ? ' from ' : ' to ') : ''}`;
      const amount = document.createElement('span');
      amount.className = `amount ${incoming ? 'in' : 'out'}`;
      amount.textContent = `${incoming ? '+' : '−'}${credits(BigInt(row.amount))}`;
      const detail = document.createElement('span');
      detail.className = 'detail';
      detail.textContent = `${row.counterparty === undefined ? '' : whoIs(node, row.counterparty, tip)} · block ${row.height}`;
      item.append(what, amount, detail);
      return item;
    }),
  );
  // The send's message said "pending": once a block has the transaction, it says so instead.
  if (lastSend !== null && !node.mempool.pending().some((tx) => toHex(tx.id) === lastSend!.id)) {
    const row = rows.find((r) => r.tx_id === lastSend!.id);
    if (row !== undefined) {
      say('send-message', 'ok', `Sent ${credits(lastSend.amount)} credits (transaction ${lastSend.id.slice(0, 16)}…): in block ${row.height}.`);
      lastSend = null;
    }
  }
  const base = node.chain.base;
  $('history-empty').hidden = rows.length > 0 || pending.out > 0n;
  $('history-empty').textContent = base > 0 ? 'No transactions in the blocks this browser holds.' : 'No transactions yet.';
  const notes = [
    rows.length === HISTORY_ROWS ? `Showing the latest ${HISTORY_ROWS} transactions.` : '',
    base > 0
      ? `This browser keeps the last ${LIGHT_RETENTION_BLOCKS.toLocaleString('en')} blocks; it holds blocks from ${base} on, so older history is not shown here.`
      : '',
  ];
  $('history-note').textContent = notes.filter((n) => n !== '').join(' ');
  const sends = node.mempool.pending().flatMap((tx) => (tx.body.kind === 'Transfer' && toHex(tx.body.sender) === selfHex ? [tx.body] : []));
  $('pending-list').replaceChildren(
    ...sends.map((body) => {
      const item = document.createElement('li');
      const what = document.createElement('span');
      what.textContent = 'Transfer to (pending)';
      const amount = document.createElement('span');
      amount.className = 'amount out';
      amount.textContent = `−${credits(body.amount)}`;
      const detail = document.createElement('span');
      detail.className = 'detail';
      detail.textContent = `${whoIs(node, toHex(body.to), tip)} · not yet in a block`;
      item.append(what, amount, detail);
      return item;
    }),
  );
}

async function send(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  if (light === null || wallet === null) {
    say('send-message', 'error', 'Not sent: the light node is not running.');
    return;
  }
  const node = light.node;
  const toInput = $<HTMLInputElement>('send-to');
  const amountInput = $<HTMLInputElement>('send-amount');
  toInput.removeAttribute('aria-invalid');
  amountInput.removeAttribute('aria-invalid');
  const check = checkSend(toInput.value, amountInput.value, {
    self: wallet.key.publicKey,
    free: freeNow(node, wallet.key.publicKey),
    resolveName: (name) => {
      const entry = node.chain.state.name(name);
      return entry !== undefined && entry.expires > node.chain.tip.height + 1 ? entry.owner : undefined;
    },
  });
  if (!check.ok) {
    (check.field === 'to' ? toInput : amountInput).setAttribute('aria-invalid', 'true');
    (check.field === 'to' ? toInput : amountInput).focus();
    say('send-message', 'error', check.message);
    return;
  }
  const button = $<HTMLButtonElement>('send-submit');
  button.disabled = true;
  try {
    const id = await node.services.ledger.transfer(check.to, check.amount);
    const when = light.network.peers().length === 0 ? 'no host is reachable now: it goes out when one is' : 'it is pending until a block includes it';
    amountInput.value = '';
    // The figures first: once "Sent" shows, the free balance already counts the send.
    await render().catch(() => {});
    say('send-message', 'ok', `Sent ${credits(check.amount)} credits (transaction ${id.slice(0, 16)}…); ${when}.`);
    lastSend = { id, amount: check.amount };
  } catch (error) {
    say('send-message', 'error', `Not sent: ${messageOf(error)}`);
  } finally {
    button.disabled = false;
  }
}

async function startNode(config: WalletConfig, key: WalletKey): Promise<void> {
  wallet = key;
  $('onboard').hidden = true;
  // The send form comes once the light node runs: before, there is nothing to sign against.
  for (const id of ['balance-card', 'receive-card', 'history-card', 'backup-card']) $(id).hidden = false;
  renderReceive();
  setStatus('starting', 'Connecting to the mesh…');
  light = await LightNode.start({
    key: key.key,
    params: paramsOf(config),
    hosts: config.hosts,
    checkpoint: fromHex(config.checkpoint.hash, 32, 'checkpoint'),
    log: (line) => console.debug(line),
    onWaiting: (waiting) => {
      setStatus(waiting ? 'offline' : 'starting', waiting ? 'Offline: no host reachable, retrying' : 'Connecting to the mesh…');
      $('balance-note').textContent = waiting ? 'No host is reachable yet: the wallet starts as soon as one is.' : '';
    },
    onStage: (s) => {
      if (s === 'checkpoint') setStatus('syncing', `Fetching and checking the state at block ${config.checkpoint.height}…`, 0);
    },
  });
  $('send-card').hidden = false;
  await notePinned(config);
  light.node.services.ledger.followBlocks(null, () => void render().catch(() => {}));
  await render();
  setInterval(() => void render().catch(() => {}), 1_000);
}

/** With a pinned checkpoint on a browser that already held a chain: whether the pin is on it, or plainly that it is ignored. */
async function notePinned(config: WalletConfig): Promise<void> {
  if (light === null || !new URLSearchParams(location.search).has('checkpoint') || light.node.chain.base === config.checkpoint.height) return;
  const where = await light.checkpointOnChain(config.checkpoint.height, config.checkpoint.hash);
  const note = $('pin-note');
  note.hidden = false;
  note.textContent =
    where === 'held'
      ? `The pinned checkpoint (block ${config.checkpoint.height}) is on the chain this browser holds.`
      : `This browser already holds a chain and goes on with it, so the pinned checkpoint is ignored: ${where === 'other' ? `block ${config.checkpoint.height} of the held chain is another block` : `block ${config.checkpoint.height} is outside the blocks held`}.`;
}

/** What the page says when the light node cannot start, by what went wrong. */
function startFailed(error: unknown, config: WalletConfig): void {
  if (error instanceof CheckpointRefusedError) {
    setStatus('error', 'Checkpoint refused');
    showError(`The light node could not start: ${messageOf(error)}`, { retry: true });
  } else if (error instanceof SegmentError && (error.code === 'timeout' || error.code === 'no-peer' || error.code === 'not-served')) {
    setStatus('error', 'No answer from the hosts');
    showError(
      `No host sent the state at block ${config.checkpoint.height} in time (${messageOf(error)}). Check that the host is running and holds that block, then retry.`,
      { retry: true },
    );
  } else {
    setStatus('error', 'Stopped');
    showError(`The light node could not start: ${messageOf(error)}`, { retry: true });
  }
}

async function resetChain(params: ChainParams): Promise<void> {
  const button = $<HTMLButtonElement>('reset-chain');
  button.disabled = true;
  await light?.stop().catch(() => {});
  light = null;
  try {
    await deleteChainStore(params);
    location.reload();
  } catch (error) {
    button.disabled = false;
    $('error-text').textContent = `The chain store was not reset: ${messageOf(error)}`;
  }
}

async function boot(): Promise<void> {
  // crypto.subtle and Web Locks exist only in a secure context: localhost or HTTPS.
  if (!isSecureContext) {
    setStatus('error', 'Needs localhost or HTTPS');
    showError(
      `This wallet only runs on a page served from localhost or over HTTPS; ${location.origin} is plain HTTP, where the browser withholds the cryptography the wallet needs. Open it as http://localhost:… on the host's machine, or through HTTPS.`,
    );
    return;
  }
  $('retry').addEventListener('click', () => location.reload());
  $<HTMLFormElement>('send').addEventListener('submit', (e) => void send(e));
  $<HTMLFormElement>('backup-form').addEventListener('submit', (e) => void exportBackup(e));
  $('backup-first').addEventListener('click', () => {
    $('backup-card').scrollIntoView({ block: 'center' });
    $('backup-pass').focus();
  });
  $('receive-show').addEventListener('click', () => {
    wantsReceive = true;
    renderReceive();
    ($('backup-ask').hidden ? $('copy') : $('backup-first')).focus();
  });
  $('copy').addEventListener('click', () => {
    const copied = navigator.clipboard?.writeText($('node-id').textContent ?? '') ?? Promise.reject(new Error('no clipboard'));
    void copied.then(
      () => say('copy-message', 'ok', 'NodeId copied.'),
      () => say('copy-message', 'error', 'Could not copy: select the NodeId above and copy it.'),
    );
  });

  let configs: { host: WalletConfig; pinned: WalletConfig | null };
  try {
    configs = await loadConfig();
  } catch (error) {
    setStatus('offline', 'Offline');
    showError(`Cannot load the wallet: ${messageOf(error)}`, { retry: true });
    return;
  }
  hostCheckpoint = configs.host.checkpoint;
  $('reset-chain').addEventListener('click', () => void resetChain(paramsOf(configs.host)));
  const begin = (key: WalletKey): void => {
    void (async () => {
      let config = configs.host;
      if (configs.pinned !== null) {
        // A first start roots the chain in the pinned checkpoint: only with the user's yes. A later start reopens its chain.
        if (await holdsChain(paramsOf(configs.pinned))) config = configs.pinned;
        else if (await confirmPinned(configs.pinned)) config = configs.pinned;
      }
      // Another checkpoint than the host's was chosen: the host's block is no test of the chain.
      if (config.checkpoint.hash !== configs.host.checkpoint.hash) hostCheckpoint = null;
      await startNode(config, key).catch((error: unknown) => startFailed(error, config));
    })();
  };
  // One light node per browser profile: two tabs would write one chain store and be one peer twice.
  // The lock is held for the page's life and freed when it closes.
  const held = await new Promise<boolean>((resolve) => {
    void navigator.locks.request('mesh-wallet-node', { ifAvailable: true }, (lock) => {
      resolve(lock !== null);
      return lock === null ? undefined : new Promise<never>(() => {});
    });
  });
  if (!held) {
    setStatus('error', 'Open in another tab');
    showError('This wallet is already open in another tab or window of this browser. Use that one, or close it and reload this page.');
    return;
  }
  const kept = await keys.load();
  if (kept !== null) return begin(kept);

  setStatus('starting', 'No key yet');
  $('onboard').hidden = false;
  $('create').addEventListener('click', () => void keys.create().then(begin));
  // A sealed backup asks for its passphrase; a clear one (an older backup) opens at once.
  let chosen = '';
  const open = (passphrase?: string): void =>
    void keys.import(chosen, passphrase).then(begin, (error: unknown) => {
      const wrongPass = error instanceof IdentityFileError && error.code === 'identity-passphrase';
      say('onboard-message', 'error', wrongPass ? `Not opened: ${messageOf(error)}.` : `That file is not a mesh key backup: ${messageOf(error)}`);
      if (wrongPass) $('import-pass').focus();
    });
  $<HTMLInputElement>('import-file').addEventListener('change', (event) => {
    const file = (event.target as HTMLInputElement).files?.[0];
    if (file === undefined) return;
    say('onboard-message', 'ok', '');
    void file.text().then((text) => {
      chosen = text;
      $('import-form').hidden = !isSealedBackup(text);
      if (isSealedBackup(text)) $('import-pass').focus();
      else open();
    });
  });
  $<HTMLFormElement>('import-form').addEventListener('submit', (event) => {
    event.preventDefault();
    open($<HTMLInputElement>('import-pass').value);
  });
}

void boot();
