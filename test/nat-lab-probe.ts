/**
 * Small network probes run inside lab namespaces (`lab.exec(host, [node, this file, …])`); each
 * prints one line of JSON and exits, or serves until killed.
 *   observe PORT…             TCP and UDP on each port: answer with the address the packet came from
 *   udp LOCAL HOST PORT…      from one UDP socket bound to LOCAL, ask each HOST:PORT what it sees
 *   tcp HOST PORT TIMEOUT_MS  connect and read the answer: {seen} | {error: 'timeout'|code}
 */
import { createSocket } from 'node:dgram';
import { connect, createServer } from 'node:net';

const [command, ...rest] = process.argv.slice(2);

if (command === 'observe') {
  for (const port of rest.map(Number)) {
    createServer((socket) => socket.end(`${socket.remoteAddress}:${socket.remotePort}`)).listen(port, '0.0.0.0');
    const udp = createSocket('udp4');
    udp.on('message', (_message, from) => udp.send(`${from.address}:${from.port}`, from.port, from.address));
    udp.bind(port);
  }
  process.stdout.write('ready\n');
} else if (command === 'udp') {
  const [local, host, ...ports] = rest;
  const socket = createSocket('udp4');
  const seen: string[] = [];
  socket.on('message', (message) => {
    seen.push(message.toString());
    if (seen.length === ports.length) {
      process.stdout.write(`${JSON.stringify({ seen })}\n`);
      process.exit(0);
    }
  });
  // One at a time, so each answer is matched to its port.
  socket.bind(Number(local), () => {
    for (const port of ports) socket.send('who', Number(port), host);
  });
  setTimeout(() => {
    process.stdout.write(`${JSON.stringify({ seen, error: 'timeout' })}\n`);
    process.exit(0);
  }, 5_000);
} else if (command === 'tcp') {
  const [host, port, timeoutMs] = rest;
  const socket = connect(Number(port), host);
  let data = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (data += chunk));
  socket.on('end', () => {
    process.stdout.write(`${JSON.stringify({ seen: data })}\n`);
    process.exit(0);
  });
  socket.on('error', (error: NodeJS.ErrnoException) => {
    process.stdout.write(`${JSON.stringify({ error: error.code })}\n`);
    process.exit(0);
  });
  setTimeout(() => {
    process.stdout.write(`${JSON.stringify({ error: 'timeout' })}\n`);
    process.exit(0);
  }, Number(timeoutMs));
} else {
  throw new Error(`unknown probe ${command}`);
}
