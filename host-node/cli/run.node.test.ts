/** The CLI kit: parsing against a definition, the help made from it, exit codes, and the value parsers. */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { command, EXIT, entry, flag, list, option, positional, UsageError, usage } from './command.ts';
import { parseCommand, runCommand } from './run.ts';
import { credits, decimal, integer, nodeId, oneOf, port } from './values.ts';

const copy = command({
  description: 'Copies things.',
  options: {
    out: option({ value: 'FILE', description: 'where to write', required: true }),
    port: option({ value: 'N', description: 'a port', parse: port(), default: 8080 }),
    level: option({ value: 'N', description: 'how hard', parse: integer(1, 9) }),
    tag: list({ value: 'TAG', description: 'a tag' }),
    from: list({ value: 'FILE', description: 'an input' }),
    force: flag('overwrite', 'f'),
  },
  positionals: { what: positional('what', 'the thing', (text) => text.toUpperCase()) },
  notes: 'Notes at the end.',
  run: () => EXIT.done,
});

test('options: defaults, required values, repeatable ones in order, flags, inline values', () => {
  const input = parseCommand(copy, ['thing', '--out', 'a.json', '--tag=x', '-f', '--from', 'one', '--tag', 'y', '--from=two']);
  assert.deepEqual(input.options, { out: 'a.json', port: 8080, level: undefined, tag: ['x', 'y'], from: ['one', 'two'], force: true });
  assert.deepEqual(input.args, { what: 'THING' });
  assert.deepEqual(
    input.given.map((g) => [g.name, g.text]),
    [
      ['out', 'a.json'],
      ['tag', 'x'],
      ['force', undefined],
      ['from', 'one'],
      ['tag', 'y'],
      ['from', 'two'],
    ],
  );
  assert.equal(parseCommand(copy, ['t', '--out', 'a', '--port', '0', '--level=9']).options.level, 9);
  assert.equal(parseCommand(copy, ['t', '--out', 'a', '--force']).options.force, true);
  assert.equal(parseCommand(copy, ['t', '--out', 'a']).options.force, false);
});

test('options: every refusal is a UsageError (a RangeError) that names the problem', () => {
  const refusals: [string[], RegExp][] = [
    [['t'], /^--out FILE is required$/],
    [['t', '--out'], /^--out needs a value \(FILE\)$/],
    [['t', '--out', '--force'], /^--out needs a value/],
    [['t', '--out', ''], /^--out needs a value/],
    [['t', '--out='], /^--out needs a value/],
    [['t', '--out', 'a', '--out', 'b'], /^--out is given twice$/],
    [['t', '--out', 'a', '--frob'], /^unknown option '--frob'$/],
    [['t', '--out', 'a', '-x'], /^unknown option '-x'$/],
    [['t', '--out', 'a', '--force=yes'], /^--force takes no value$/],
    [['t', '--out', 'a', '--port', '70000'], /^--port must be a port number 0–65535, got "70000"$/],
    [['t', '--out', 'a', '--level', '0'], /^--level takes an integer from 1 to 9, got "0"$/],
    [['t', 'u', '--out', 'a'], /^unexpected argument "u"$/],
    [['--out', 'a'], /^missing <what>$/],
    [['', '--out', 'a'], /^<what> is empty$/],
  ];
  for (const [args, message] of refusals) {
    assert.throws(
      () => parseCommand(copy, args),
      (error: unknown) => error instanceof UsageError && error instanceof RangeError && message.test(error.message),
      args.join(' '),
    );
  }
});

test('a negative number is an argument for its parser to judge, not an unknown option', () => {
  const pay = command({ positionals: { amount: positional('credits', 'how much', credits) }, run: () => EXIT.done });
  for (const amount of ['-1', '-1.5', '-15', '-.5']) {
    assert.throws(() => parseCommand(pay, [amount]), new RegExp(`credits.*"${amount.replace('.', '\\.')}" has a sign`), amount);
  }
  assert.equal(parseCommand(pay, ['1.5']).args.amount, 15n * 10n ** 17n);
});

test('words after -- go to a command that takes them as they are, options and dashes included', () => {
  const exec = command({
    options: { cpu: option({ value: 'N', description: 'cores', parse: integer(1, 8), default: 1 }) },
    positionals: { image: positional('image', 'what to run') },
    rest: { name: 'cmd', description: 'the command' },
    run: () => EXIT.done,
  });
  const input = parseCommand(exec, ['busybox', '--cpu', '2', '--', 'sh', '-c', 'echo --cpu -1', '--']);
  assert.deepEqual([input.args, input.options, input.rest], [{ image: 'busybox' }, { cpu: 2 }, ['sh', '-c', 'echo --cpu -1', '--']]);
  assert.deepEqual(parseCommand(exec, ['busybox']).rest, []);
  assert.throws(() => parseCommand(exec, ['--', 'sh']), /^UsageError: missing <image>$/);
  assert.match(
    usage('mesh exec', exec),
    /^Usage: mesh exec <image> \[options\] \[-- <cmd>\.\.\.\]\n[\s\S]*Arguments:\n  <image> +what to run\n  -- <cmd>\.\.\. +the command\n/,
  );
  // A command without `rest` keeps taking words after -- as its positionals.
  assert.deepEqual(parseCommand(copy, ['--out', 'a', '--', '-x']).args, { what: '-X' });
});

test('the help text is made from the definition', () => {
  assert.equal(
    usage('mesh copy', copy),
    `Usage: mesh copy <what> --out FILE [options]

Copies things.

Arguments:
  <what>  the thing

Options:
  --out FILE   where to write
  --port N     a port (default 8080)
  --level N    how hard
  --tag TAG    a tag (repeatable)
  --from FILE  an input (repeatable)
  -f, --force  overwrite
  -h, --help   show this help

Notes at the end.
`,
  );
});

/** Runs `cmd` with the output collected. */
async function run(cmd: Parameters<typeof runCommand>[0], args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCommand(cmd, args, 'tool', { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

test('exit codes: 0 done, 1 failed in one line, 2 usage with the usage on stderr; --help anywhere', async () => {
  const failing = command({
    options: { why: option({ value: 'TEXT', description: 'the reason', default: 'broken' }) },
    run: ({ options }) => {
      throw new Error(options.why);
    },
  });
  assert.deepEqual(await run(failing, ['--why', 'disk full']), { code: EXIT.failed, out: '', err: 'tool: disk full\n' });
  const usageError = await run(failing, ['--what']);
  assert.equal(usageError.code, EXIT.usage);
  assert.match(usageError.err, /^tool: unknown option '--what'\n\nUsage: tool \[options\]\n/);
  const help = await run(failing, ['--what', '-h']);
  assert.equal(help.code, EXIT.done);
  assert.match(help.out, /^Usage: tool \[options\]\n[\s\S]*--why TEXT +the reason \(default broken\)/);
  assert.equal(help.err, '');
  assert.deepEqual(await run(copy, ['x', '--out', 'y']), { code: EXIT.done, out: '', err: '' });
});

test('subcommands: loaded when chosen, listed with their summaries, help for each', async () => {
  const loaded: string[] = [];
  const said: string[] = [];
  const leaf = () =>
    command({
      options: { loud: flag('shout') },
      run: ({ options, path }) => {
        said.push(`${path}${options.loud ? '!' : ''}`);
        return EXIT.done;
      },
    });
  const tool = command({
    commands: [
      entry('one', 'the first', () => {
        loaded.push('one');
        return leaf();
      }),
      entry('two', 'the second', async () => {
        loaded.push('two');
        return leaf();
      }),
    ],
  });
  assert.equal((await run(tool, ['two', '--loud'])).code, EXIT.done);
  assert.deepEqual([loaded, said], [['two'], ['tool two!']]);
  const list = await run(tool, ['help']);
  assert.equal(list.code, EXIT.done);
  assert.match(list.out, /^Usage: tool <command> \[options\]\n\nCommands:\n  one   the first\n  two   the second\n  help  show this help\n/);
  assert.match((await run(tool, ['help', 'one'])).out, /^Usage: tool one \[options\]/);
  assert.match((await run(tool, ['one', '--help'])).out, /--loud +shout/);
  const none = await run(tool, []);
  assert.equal(none.code, EXIT.usage);
  assert.match(none.err, /^tool: missing command\n\nUsage: tool <command>/);
  const unknown = await run(tool, ['three']);
  assert.equal(unknown.code, EXIT.usage);
  assert.match(unknown.err, /^tool: unknown command "three"/);
});

test('a command with its own options and subcommands runs itself unless a subcommand is named', async () => {
  const ran: string[] = [];
  const both = command({
    options: { port: option({ value: 'N', description: 'a port', parse: port(), default: 1 }) },
    commands: [
      entry('import', 'bring things in', () =>
        command({
          run: () => {
            ran.push('import');
            return EXIT.done;
          },
        }),
      ),
    ],
    run: ({ options }) => {
      ran.push(`serve ${options.port}`);
      return EXIT.done;
    },
  });
  await run(both, ['--port', '2']);
  await run(both, ['import']);
  assert.deepEqual(ran, ['serve 2', 'import']);
  assert.match(usage('tool', both), /^Usage: tool \[options\]\n {7}tool <command> \[options\]\n[\s\S]*Options:[\s\S]*Commands:\n  import/);
});

test('value parsers accept their values and name the option when refusing', () => {
  assert.equal(port()('0', '--port'), 0);
  assert.equal(port(65_534)('65534', '--p'), 65_534);
  assert.throws(() => port(65_534)('65535', '--p'), /--p must be a port number 0–65534, got "65535"/);
  for (const bad of ['-1', '1.5', ' 80', '', '8e3']) assert.throws(() => port()(bad, '--port'), UsageError, bad);
  assert.equal(integer(100)('100', '--records'), 100);
  assert.throws(() => integer(100)('99', '--records'), /--records takes an integer of at least 100, got "99"/);
  assert.throws(() => integer(0)('99999999999999999999', '--n'), UsageError);
  assert.equal(decimal(0, 10)('2.5', '--rate'), 2.5);
  assert.throws(() => decimal(0, 10)('fast', '--rate'), /--rate takes a number from 0 to 10, got "fast"/);
  assert.equal(oneOf(['node', 'deno'])('deno', '--runtime'), 'deno');
  assert.throws(() => oneOf(['node', 'deno'])('bun', '--runtime'), /--runtime takes one of node, deno, got "bun"/);
  assert.deepEqual(nodeId('ab'.repeat(32), '<node-id>'), new Uint8Array(32).fill(0xab));
  for (const bad of ['AB'.repeat(32), 'ab'.repeat(31), 'zz'.repeat(32)])
    assert.throws(() => nodeId(bad, '<node-id>'), /<node-id> must be a node id, 64 lowercase hex/);
  assert.equal(credits('0.000000000000000001', '<credits>'), 1n);
  assert.throws(() => credits('0', '<credits>'), /<credits> must be more than 0/);
  for (const bad of ['1e3', '-1', '1.0000000000000000001', 'one']) assert.throws(() => credits(bad, '<credits>'), UsageError, bad);
});
