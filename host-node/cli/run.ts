/**
 * Parses a command line against a command definition with `node:util`'s parseArgs (on Node and on
 * Deno) and runs it: subcommands, `--help`/`-h` everywhere, and the fixed exit codes (0 done; 1 failed,
 * said in one line; 2 usage, the problem and the usage on stderr).
 */
import { parseArgs } from 'node:util';
import { type Command, EXIT, type Input, type Io, type Options, type Positionals, UsageError, usage } from './command.ts';

/** Standard output and error of this process. */
export const processIo: Io = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  input: process.stdin,
};

/**
 * A closed pipe (`mesh signals | head -5`) ends the command quietly with exit 0, as a Unix tool
 * ends on SIGPIPE: Node reports it as an EPIPE error on the stream, which would otherwise end the
 * process with a stack trace and exit 1. Any other error on the streams is thrown as before.
 */
export function exitOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(0);
      throw error;
    });
  }
}

const NUMBER = /^-[0-9.]/;

/**
 * Reads `args` as `cmd`'s options and positionals; throws UsageError naming the first problem.
 * Every value and argument is refused when empty, and an option given twice unless repeatable.
 */
export function parseCommand<O extends Options, P extends Positionals>(cmd: Command<O, P>, args: readonly string[], path = ''): Input<O, P> {
  const config = Object.fromEntries(
    Object.entries(cmd.options).map(([name, o]) => [
      name,
      { type: o.kind === 'flag' ? ('boolean' as const) : ('string' as const), ...(o.short !== undefined && { short: o.short }) },
    ]),
  );
  const { tokens } = parseArgs({ args: [...args], options: config, strict: false, allowPositionals: true, tokens: true });
  const texts: string[] = [];
  const rest: string[] = [];
  let terminated = false;
  const given: { name: string; text: string | undefined }[] = [];
  // parseArgs splits `-1.5` into the short options -1, -. and -5, all at one index: taken once.
  let numberAt = -1;
  for (const token of tokens) {
    if (token.kind === 'option-terminator') terminated = cmd.rest !== undefined;
    if (token.kind === 'positional') (terminated ? rest : texts).push(token.value);
    if (token.kind !== 'option') continue;
    // A negative number is an argument (refused by its parser with a reason), not an unknown option.
    if (NUMBER.test(token.rawName)) {
      if (token.index !== numberAt) texts.push(args[token.index]!);
      numberAt = token.index;
      continue;
    }
    const spec = cmd.options[token.name];
    if (spec === undefined) throw new UsageError(`unknown option '${token.rawName}'`);
    const flag = `--${token.name}`;
    if (spec.kind === 'flag') {
      if (token.value !== undefined) throw new UsageError(`${flag} takes no value`);
    } else {
      // parseArgs takes whatever follows as the value, even `--force`: that is a missing value.
      // A lone `-` is a value: standard input, by convention.
      const value = token.value;
      if (value === undefined || value === '' || (!token.inlineValue && value.startsWith('-') && value !== '-' && !NUMBER.test(value))) {
        throw new UsageError(`${flag} needs a value (${spec.value})`);
      }
    }
    if (spec.kind !== 'list' && given.some((g) => g.name === token.name)) throw new UsageError(`${flag} is given twice`);
    given.push({ name: token.name, text: token.value });
  }
  const options: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(cmd.options)) {
    const mine = given.filter((g) => g.name === name);
    const flag = `--${name}`;
    if (spec.kind === 'flag') options[name] = mine.length > 0;
    else if (spec.kind === 'list') options[name] = mine.map((g) => spec.parse(g.text!, flag));
    else if (mine[0] !== undefined) options[name] = spec.parse(mine[0].text!, flag);
    else if (spec.required) throw new UsageError(`${flag} ${spec.value} is required`);
    else options[name] = spec.fallback;
  }
  const names = Object.entries(cmd.positionals);
  if (texts.length > names.length) throw new UsageError(`unexpected argument ${JSON.stringify(texts[names.length])}`);
  const positionals: Record<string, unknown> = {};
  names.forEach(([key, p], i) => {
    const text = texts[i];
    if (text === undefined) throw new UsageError(`missing <${p.name}>`);
    if (text === '') throw new UsageError(`<${p.name}> is empty`);
    positionals[key] = p.parse(text, `<${p.name}>`);
  });
  return { options: options as Input<O, P>['options'], args: positionals as Input<O, P>['args'], given, path, argv: args, rest };
}

const asksHelp = (args: readonly string[]): boolean => {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
};

/**
 * Runs `cmd` (whose words are `path`) on `args`; resolves to its exit code. A thrown UsageError is
 * exit 2 with the usage; any other error is exit 1, its message on one line.
 */
export async function runCommand(cmd: Command, args: readonly string[], path: string, io: Io = processIo): Promise<number> {
  const first = args[0];
  if (cmd.commands.length > 0) {
    const sub = cmd.commands.find((e) => e.name === first);
    if (sub !== undefined) return runCommand(await sub.load(), args.slice(1), `${path} ${sub.name}`, io);
    if (first === 'help' && args.length === 1) {
      io.out(usage(path, cmd));
      return EXIT.done;
    }
    if (first === 'help' && args.length === 2) return runCommand(cmd, [args[1]!, '--help'], path, io);
  }
  if (asksHelp(args)) {
    io.out(usage(path, cmd));
    return EXIT.done;
  }
  try {
    if (!cmd.run) {
      throw new UsageError(first === undefined ? 'missing command' : `unknown command ${JSON.stringify(first)}`);
    }
    return await cmd.run(parseCommand(cmd, args, path), io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${path}: ${error.message}\n\n${usage(path, cmd)}`);
      return EXIT.usage;
    }
    io.err(`${path}: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.failed;
  }
}
