/**
 * A DNS server for tests that answers TXT questions from a table, over UDP: enough for `/dnsaddr`
 * names (`_dnsaddr.<name>` TXT `dnsaddr=<multiaddr>`) without the internet. Any other name or type
 * is NXDOMAIN / an empty answer.
 *
 * Run as a program it serves `records` (JSON, argv[2]) on `host` (argv[3]) port 53 and prints
 * `ready` once bound: how a test serves the resolver of a network namespace.
 */
import { createSocket, type Socket } from 'node:dgram';

const TXT = 16;
const encoder = new TextEncoder();

/** The question's name (dotted) and type, and where the question ends. */
function question(packet: Uint8Array): { name: string; type: number; end: number } {
  const labels: string[] = [];
  let at = 12;
  while (packet[at] !== 0) {
    const length = packet[at]!;
    labels.push(new TextDecoder().decode(packet.subarray(at + 1, at + 1 + length)));
    at += 1 + length;
  }
  const type = (packet[at + 1]! << 8) | packet[at + 2]!;
  return { name: labels.join('.').toLowerCase(), type, end: at + 5 };
}

function u16(n: number): number[] {
  return [(n >> 8) & 0xff, n & 0xff];
}

/** The answer to `query`: each record of the name as one TXT answer, its text cut into strings of 255 bytes. */
function answer(query: Uint8Array, records: Readonly<Record<string, readonly string[]>>): Uint8Array {
  const { name, type, end } = question(query);
  const found = records[name];
  const texts = found !== undefined && type === TXT ? found : [];
  const answers: number[] = [];
  for (const text of texts) {
    const bytes = encoder.encode(text);
    const rdata: number[] = [];
    for (let i = 0; i < bytes.length; i += 255) {
      const chunk = bytes.subarray(i, i + 255);
      rdata.push(chunk.length, ...chunk);
    }
    // The name as a pointer to the question's (offset 12), TXT, IN, a TTL of 60 s.
    answers.push(0xc0, 12, ...u16(TXT), ...u16(1), 0, 0, 0, 60, ...u16(rdata.length), ...rdata);
  }
  const rcode = found === undefined ? 3 : 0;
  const header = [query[0]!, query[1]!, 0x81, 0x80 | rcode, ...u16(1), ...u16(texts.length), 0, 0, 0, 0];
  return Uint8Array.from([...header, ...query.subarray(12, end), ...answers]);
}

/** Serves `records` (lower-case names to TXT texts) on UDP `host`:`port`; resolves once bound. */
export async function startDnsServer(records: Readonly<Record<string, readonly string[]>>, host: string, port: number): Promise<Socket> {
  const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
  socket.on('message', (query, from) => {
    if (query.length < 17) return;
    socket.send(answer(new Uint8Array(query), records), from.port, from.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, host, () => resolve());
  });
  return socket;
}

if (import.meta.main) {
  await startDnsServer(JSON.parse(process.argv[2]!) as Record<string, string[]>, process.argv[3] ?? '127.0.0.1', 53);
  process.stdout.write('ready\n');
}
