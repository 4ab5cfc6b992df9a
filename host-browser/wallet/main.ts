/**
 * The wallet page: a light node in the page (light-node.ts) and a key kept in IndexedDB
 * (keystore.ts). Every signature is made here; the host that served the page only serves files and
 * its config (docs/browser.md).
 */
import qrcode from 'qrcode-generator';
import { formatCredits } from '../../core/encoding/amount.ts';
import { fromHex, toHex } from '../../core/encoding/hex.ts';
import { freeBalance, lockedBond } from '../../core/ledger/state.ts';
import { devnet, MAINNET, LIGHT_RETENTION_BLOCKS, type ChainParams } from '../../core/ledger/params.ts';
import { MeshNode } from '../../core/node/node.ts';
import { LightNode } from '../light-node.ts';
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
let stage = 'starting';
let wantsReceive = false;
// The height a catch-up began at, for its progress bar; null while synced.
let syncFrom: number | null = null;

function setStatus(state: string, text: string, progress?: number): void {
  const status = $('status');
  status.dataset.state = state;
  status.textContent = text;
  const bar = $<HTMLProgressElement>('progress');
  bar.hidden = progress === undefined;
  if (progress !== undefined) bar.value = progress;
}

function showError(text: string | null): void {
  const banner = $('error');
  banner.hidden = text === null;
  banner.textContent = text ?? '';
}

function say(id: string, kind: 'ok' | 'error' | 'info', text: string): void {
  const element = $(id);
  element.dataset.kind = kind;
  element.textContent = text;
}

/** The page's config: the serving host's, with `?checkpoint=` and `?host=` taking precedence. */
async function loadConfig(): Promise<WalletConfig> {
  const response = await fetch('/wallet/config.json', { cache: 'no-store' });
  if (!response.ok) throw new Error(`the host did not give the wallet's config (HTTP ${response.status})`);
  const config = (await response.json()) as WalletConfig;
  const query = new URLSearchParams(location.search);
  const checkpoint = query.get('checkpoint');
  if (checkpoint !== null) config.checkpoint = { height: Number(query.get('checkpoint_height') ?? 0), hash: checkpoint };
  const hosts = query.getAll('host');
  if (hosts.length > 0) config.hosts = hosts;
  return config;
}

/** Loopback, a private IPv4 range, or a name that only a LAN resolves. */
function isPrivateHost(hostname: string): boolean {
  if (hostname === 'localhost' || hostname === '[::1]' || hostname.endsWith('.local')) return true;
  const ip = /^(\d+)\.(\d+)\.\d+\.\d+$/.exec(hostname);
  if (ip === null) return false;
  const [a, b] = [Number(ip[1]), Number(ip[2])];
  return a === 127 || a === 10 || (a === 192 && b === 168) || (a === 172 && b >= 16 && b <= 31);
}

function paramsOf(config: WalletConfig): ChainParams {
  if (config.network === MAINNET.network) return MAINNET;
  if (config.network === devnet().network) return devnet(config.block_interval_ms);
  throw new Error(`this wallet does not know the network ${config.network}`);
}

// ---- the key ----

function downloadBackup(key: WalletKey): void {
  const blob = new Blob([keys.backupText(key.key)], { type: 'application/json' });
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = `mesh-wallet-${toHex(key.key.publicKey).slice(0, 12)}.json`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

async function exportBackup(): Promise<void> {
  if (wallet === null) return;
  downloadBackup(wallet);
  await keys.markBackedUp();
  wallet = { ...wallet, backedUp: true };
  say('backup-message', 'ok', 'Backup file saved. Keep it private.');
  renderReceive();
}

function renderReceive(): void {
  const backedUp = wallet?.backedUp === true;
  $('backup-ask').hidden = !(wantsReceive && !backedUp);
  $('receive-box').hidden = !(wantsReceive && backedUp);
  $('receive-show').hidden = wantsReceive && backedUp;
  if (wantsReceive && backedUp && wallet !== null) {
    const id = toHex(wallet.key.publicKey);
    if ($('node-id').textContent !== id) {
      $('node-id').textContent = id;
      const qr = qrcode(0, 'M');
      qr.addData(id);
      qr.make();
      $('qr').innerHTML = qr.createSvgTag({ cellSize: 4, margin: 2, scalable: true });
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
  if (peers === 0) setStatus('offline', 'Offline: no host reachable, retrying');
  else if (target > tip) {
    syncFrom ??= tip;
    setStatus('syncing', `Syncing block ${tip} of ${target} · ${peerCount}`, target === syncFrom ? 1 : (tip - syncFrom) / (target - syncFrom));
  } else {
    syncFrom = null;
    setStatus('synced', `Synced · ${peerCount}`);
  }

  const account = node.chain.state.account(self);
  const pending = pendingOf(node, selfHex);
  const locked = account.locked_bids + account.locked_channels + lockedBond(account, tip);
  $('balance').textContent = credits(account.balance);
  $('pending').textContent = pending.in === 0n && pending.out === 0n ? 'none' : `+${credits(pending.in)} / −${credits(pending.out)}`;
  $('free').textContent = credits(freeBalance(account, tip));
  $('locked').textContent = credits(locked);
  $('height').textContent = String(tip);
  $('balance-note').textContent = target > tip ? 'Catching up: the balance is the one at the height shown and may change.' : '';

  const rows = await node.transactions(self, { limit: 50 });
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
      detail.textContent = `${row.counterparty ?? ''} · block ${row.height}`;
      item.append(what, amount, detail);
      return item;
    }),
  );
  const base = node.chain.base;
  $('history-empty').hidden = rows.length > 0;
  $('history-empty').textContent = base > 0 ? 'No transactions in the blocks this browser holds.' : 'No transactions yet.';
  $('history-note').textContent =
    base > 0
      ? `This browser keeps the last ${LIGHT_RETENTION_BLOCKS.toLocaleString('en')} blocks; it holds blocks from ${base} on, so older history is not shown here.`
      : '';
}

async function send(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  if (light === null || wallet === null) return;
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
    const id = await node.transfer(check.to, check.amount);
    const when = light.network.peers().length === 0 ? 'no host is reachable now: it goes out when one is' : 'it is pending until a block includes it';
    say('send-message', 'ok', `Sent ${credits(check.amount)} credits (transaction ${id.slice(0, 16)}…); ${when}.`);
    amountInput.value = '';
    await render();
  } catch (error) {
    say('send-message', 'error', `Not sent: ${messageOf(error)}`);
  } finally {
    button.disabled = false;
  }
}

async function startNode(config: WalletConfig, key: WalletKey): Promise<void> {
  wallet = key;
  $('onboard').hidden = true;
  for (const id of ['balance-card', 'send-card', 'receive-card', 'history-card', 'backup-card']) $(id).hidden = false;
  renderReceive();
  setStatus('starting', 'Connecting to the mesh…');
  light = await LightNode.start({
    key: key.key,
    params: paramsOf(config),
    hosts: config.hosts,
    checkpoint: fromHex(config.checkpoint.hash, 32, 'checkpoint'),
    log: (line) => console.debug(line),
    // A wallet served from this machine or the LAN dials hosts there; one served from the internet does not.
    allowPrivateAddresses: isPrivateHost(location.hostname),
    onStage: (s) => {
      stage = s;
      if (s === 'checkpoint') setStatus('syncing', `Fetching and checking the state at block ${config.checkpoint.height}…`, 0);
    },
  });
  light.node.onBlock(() => void render().catch(() => {}));
  await render();
  setInterval(() => void render().catch(() => {}), 1_000);
}

async function boot(): Promise<void> {
  $<HTMLFormElement>('send').addEventListener('submit', (e) => void send(e));
  $('export').addEventListener('click', () => void exportBackup());
  $('backup-first').addEventListener('click', () => void exportBackup());
  $('receive-show').addEventListener('click', () => {
    wantsReceive = true;
    renderReceive();
    ($('backup-ask').hidden ? $('copy') : $('backup-first')).focus();
  });
  $('copy').addEventListener('click', () => void navigator.clipboard?.writeText($('node-id').textContent ?? '').catch(() => {}));

  let config: WalletConfig;
  try {
    config = await loadConfig();
  } catch (error) {
    setStatus('offline', 'Offline');
    showError(`Cannot load the wallet: ${messageOf(error)}`);
    return;
  }
  const begin = (key: WalletKey): void =>
    void startNode(config, key).catch((error: unknown) => {
      setStatus('error', stage === 'checkpoint' ? 'Checkpoint refused' : 'Stopped');
      showError(`The light node could not start: ${messageOf(error)}`);
    });
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
  $<HTMLInputElement>('import-file').addEventListener('change', (event) => {
    const file = (event.target as HTMLInputElement).files?.[0];
    if (file === undefined) return;
    void file
      .text()
      .then((text) => keys.import(text))
      .then(begin, (error: unknown) => say('onboard-message', 'error', `That file is not a mesh key backup: ${messageOf(error)}`));
  });
}

void boot();
