/**
 * Where a backup's passphrase comes from: a file (`-` for standard input), else a hidden prompt on
 * the terminal. Never from the command line or the environment, where other users' `ps` can read it.
 */
import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';

// A passphrase file holds one line; anything far larger is not one.
const MAX_FILE_BYTES = 4096;

/** Reads the passphrase; on a terminal, `confirm` asks for it twice. */
export async function readPassphrase(options: { file?: string; prompt: string; confirm?: boolean }): Promise<string> {
  if (options.file !== undefined) return firstLine(options.file === '-' ? await text(process.stdin) : await readPassphraseFile(options.file));
  if (!process.stdin.isTTY) {
    throw new Error('the backup needs a passphrase: run this on a terminal, or give --passphrase-file FILE (- for standard input)');
  }
  const first = await ask(options.prompt);
  if (options.confirm === true && (await ask('Again, to confirm: ')) !== first) throw new Error('the two passphrases differ; nothing was written');
  return first;
}

async function readPassphraseFile(path: string): Promise<string> {
  try {
    const bytes = await readFile(path);
    if (bytes.length > MAX_FILE_BYTES) throw new Error(`${path} is over ${MAX_FILE_BYTES} bytes: not a passphrase file`);
    return new TextDecoder().decode(bytes);
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw code === undefined ? error : new Error(`cannot read the passphrase file ${path} (${code})`);
  }
}

function firstLine(content: string): string {
  return content.split(/\r?\n/, 1)[0]!;
}

/** One line typed on the terminal without echo; Ctrl-C cancels. */
function ask(prompt: string): Promise<string> {
  const input = process.stdin;
  process.stderr.write(prompt);
  input.setRawMode(true);
  input.setEncoding('utf8');
  input.resume();
  return new Promise((resolve, reject) => {
    let typed = '';
    const finish = (error?: Error): void => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      process.stderr.write('\n');
      if (error === undefined) resolve(typed);
      else reject(error);
    };
    const onData = (chunk: string): void => {
      for (const character of chunk) {
        if (character === '\r' || character === '\n' || character === '\u0004') return finish();
        if (character === '\u0003') return finish(new Error('cancelled; nothing was written'));
        if (character === '\u007f' || character === '\b') typed = [...typed].slice(0, -1).join('');
        else if (character >= ' ') typed += character;
      }
    };
    input.on('data', onData);
  });
}
