/**
 * The mount helper against a real /bin/sh and real programs (printf, sh, sleep, cat): arguments arrive
 * as they were given whatever they hold, each request gets its own exit status and output, and every
 * failure (a timeout, a helper that dies, one that cannot start, too much output, the kubelet dying)
 * ends in a clear error, a working next request, and no process left behind. No root needed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CommandError, MountHelper, quoteShellWord, spawnCommand } from '../../../src/volume/mount-helper.js';

const PRINTF = '/usr/bin/printf';
let tmp = '';
let canary = '';

before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'mount-helper-'));
  canary = path.join(tmp, 'pwned');
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function gone(pid: number, withinMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

async function rejection(p: Promise<unknown>): Promise<CommandError> {
  const err = await p.then(
    () => assert.fail('expected a rejection'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof CommandError, `not a CommandError: ${String(err)}`);
  return err;
}

/** Words a pod's spec or a path could bring: each must reach the program as one argument, as given. */
function hostileWords(): string[] {
  return [
    "it's",
    "'",
    "''",
    `'\\''`,
    'two\nlines',
    '\n',
    '\r\n',
    `$(touch ${canary})`,
    `\`touch ${canary}\``,
    `; touch ${canary}`,
    `' ; touch ${canary} ; '`,
    `'$(touch ${canary})'`,
    `&& touch ${canary} #`,
    `| touch ${canary}`,
    `> ${canary}`,
    '-o',
    '--bind',
    '-',
    '--',
    '"',
    '\\',
    '\\n',
    '*',
    '?',
    '[a]',
    '~',
    '~root',
    '$HOME',
    '${PATH}',
    '$?',
    '$0',
    '!',
    '#',
    '%s%d',
    '  spaced  ',
    '\t',
    '',
    'ā é ü 日本 😀',
    // UTF-8 bytes 0x81-0x88 are dash's internal quoting marks: they must pass as data.
    '\u0101\u0102\u0103\u0104\u0105\u0106\u0107\u0108',
    Array.from({ length: 31 }, (_, i) => String.fromCharCode(i + 1)).join(''),
    'x'.repeat(10_000),
  ];
}

describe('quoteShellWord', () => {
  test('single-quotes the word, a quote as quote-backslash-quote-quote', () => {
    assert.equal(quoteShellWord('plain'), "'plain'");
    assert.equal(quoteShellWord("it's"), `'it'\\''s'`);
    assert.equal(quoteShellWord(''), "''");
  });
});

describe('MountHelper', () => {
  test('hostile arguments reach the program one for one, as given, and run nothing', async () => {
    const helper = new MountHelper();
    try {
      const words = hostileWords();
      // printf's \000 is a NUL in its output: the one byte no argument can hold.
      const output = await helper.run(PRINTF, ['%s\\000', ...words], 10_000);
      assert.deepEqual(output.split('\0').slice(0, -1), words);
      assert.equal(existsSync(canary), false, 'a word ran as a command');
      // The same as child_process makes of them.
      assert.equal(await spawnCommand(PRINTF, ['%s\\000', ...words], 10_000), output);
      // A hostile word as the command's first argument too.
      for (const w of words.slice(0, 16)) assert.equal(await helper.run(PRINTF, ['%s', w], 10_000), w);
      assert.equal(existsSync(canary), false, 'a word ran as a command');
      assert.equal(helper.pids().length, 1);
    } finally {
      await helper.close();
    }
  });

  test("a command's exit status and its stdout and stderr come back, request by request", async () => {
    const helper = new MountHelper();
    try {
      const err = await rejection(helper.run('/bin/sh', ['-c', 'echo out; echo err >&2; exit 32'], 10_000));
      assert.equal(err.exitStatus, 32);
      assert.equal(err.killed, false);
      assert.equal(err.output, 'out\nerr\n');
      assert.equal(err.message, 'exit status 32');
      assert.equal(await helper.run(PRINTF, ['no newline'], 10_000), 'no newline');
      assert.equal(await helper.run(PRINTF, [''], 10_000), '');
      // Output that looks like the helper's end-of-answer line is output.
      const fake = '\ntsk-mount-helper-000000000000000000000000-4 0\n';
      assert.equal(await helper.run(PRINTF, ['%s', fake], 10_000), fake);
      const notFound = await rejection(helper.run('no-such-program-tsk', [], 10_000));
      assert.equal(notFound.exitStatus, 127);
      assert.match(notFound.output, /no-such-program-tsk: not found/);
    } finally {
      await helper.close();
    }
  });

  test('the command reads /dev/null, never the requests that follow', async () => {
    const helper = new MountHelper({ maxHelpers: 1 });
    try {
      const [cat, after] = await Promise.all([
        helper.run('/bin/cat', [], 5_000),
        helper.run(PRINTF, ['after'], 5_000),
      ]);
      assert.equal(cat, '');
      assert.equal(after, 'after');
    } finally {
      await helper.close();
    }
  });

  test('requests are served at most maxHelpers at a time, each with its own answer', async () => {
    const helper = new MountHelper({ maxHelpers: 2 });
    try {
      const started = Date.now();
      const answers = await Promise.all([
        helper.run('/bin/sh', ['-c', 'sleep 0.3; printf one'], 5_000),
        helper.run('/bin/sh', ['-c', 'sleep 0.3; printf two'], 5_000),
        helper.run('/bin/sh', ['-c', 'sleep 0.3; printf three'], 5_000),
      ]);
      assert.deepEqual(answers, ['one', 'two', 'three']);
      // Two at once, then the third: two sleeps' time at least.
      assert.ok(Date.now() - started >= 550, `took ${Date.now() - started} ms`);
      assert.equal(helper.pids().length, 2);
    } finally {
      await helper.close();
    }
  });

  test('a command past its time bound is killed with its helper; the next request gets a new one', async () => {
    const helper = new MountHelper();
    try {
      await helper.run(PRINTF, ['warm'], 5_000);
      const [first] = helper.pids();
      assert.ok(first !== undefined);
      const marker = path.join(tmp, 'timed-out-ran-on');
      const err = await rejection(
        helper.run('/bin/sh', ['-c', `echo partial; sleep 2; touch ${quoteShellWord(marker)}`], 300),
      );
      assert.equal(err.killed, true);
      assert.equal(err.message, 'timed out');
      assert.equal(err.output, 'partial\n');
      assert.ok(await gone(first), 'the timed-out helper is still running');
      assert.equal(await helper.run(PRINTF, ['next'], 5_000), 'next');
      assert.notDeepEqual(helper.pids(), [first]);
      // Its command went with it.
      await new Promise((r) => setTimeout(r, 2_200));
      assert.equal(existsSync(marker), false, 'the timed-out command ran on');
    } finally {
      await helper.close();
    }
  });

  test('a request waiting for a busy helper is bound by its own time too', async () => {
    const helper = new MountHelper({ maxHelpers: 1 });
    try {
      const slow = helper.run('/bin/sleep', ['0.6'], 5_000);
      const err = await rejection(helper.run(PRINTF, ['late'], 100));
      assert.equal(err.killed, true);
      assert.match(err.message, /timed out waiting for a mount helper/);
      assert.equal(await slow, '');
    } finally {
      await helper.close();
    }
  });

  test('a helper that dies fails the request it ran with a clear error, and the next request works', async () => {
    const helper = new MountHelper();
    try {
      await helper.run(PRINTF, ['warm'], 5_000);
      const [pid] = helper.pids();
      assert.ok(pid !== undefined);
      const marker = path.join(tmp, 'orphan-ran-on');
      const running = helper.run('/bin/sh', ['-c', `sleep 1; touch ${quoteShellWord(marker)}`], 10_000);
      await new Promise((r) => setTimeout(r, 100));
      process.kill(pid, 'SIGKILL');
      const err = await rejection(running);
      assert.match(err.message, new RegExp(`mount helper \\(pid ${pid}\\) exited \\(SIGKILL\\)`));
      assert.match(err.message, /\/bin\/sh may or may not have run/);
      assert.equal(await helper.run(PRINTF, ['next'], 5_000), 'next');
      // The command of the helper that died went with it.
      await new Promise((r) => setTimeout(r, 1_300));
      assert.equal(existsSync(marker), false, "the dead helper's command ran on");
      const [next] = helper.pids();
      assert.ok(next !== undefined && next !== pid, 'no new helper');
    } finally {
      await helper.close();
    }
  });

  test('a shell that cannot start leaves the commands to child_process', async () => {
    const helper = new MountHelper({ shell: path.join(tmp, 'no-such-shell') });
    try {
      assert.equal(await helper.run(PRINTF, ['%s', "it's"], 5_000), "it's");
      const err = await rejection(helper.run('/bin/sh', ['-c', 'echo e >&2; exit 4'], 5_000));
      assert.equal(err.exitStatus, 4);
      assert.equal(err.output, 'e\n');
      assert.deepEqual(helper.pids(), []);
    } finally {
      await helper.close();
    }
  });

  test('a helper that dies before its first answer is taken for one that cannot start', async () => {
    // A "shell" that exits at once: the request it took fails, the ones after go through child_process.
    const helper = new MountHelper({ shell: '/bin/true' });
    try {
      const err = await rejection(helper.run(PRINTF, ['lost'], 5_000));
      assert.match(err.message, /mount helper \(pid \d+\) exited \(exit status 0\)/);
      assert.equal(await helper.run(PRINTF, ['fallback'], 5_000), 'fallback');
      assert.deepEqual(helper.pids(), []);
    } finally {
      await helper.close();
    }
  });

  test('a NUL byte in an argument, or a command that is not a program name, is refused', async () => {
    const helper = new MountHelper();
    try {
      assert.match((await rejection(helper.run(PRINTF, ['a\0b'], 5_000))).message, /contains a NUL byte/);
      for (const command of ['exit', "mount'; reboot", 'mount umount', ''])
        assert.match((await rejection(helper.run(command, [], 5_000))).message, /is not a program name/);
      assert.deepEqual(helper.pids(), []);
    } finally {
      await helper.close();
    }
  });

  test('output past the limit ends the request and its helper', async () => {
    const helper = new MountHelper();
    try {
      const err = await rejection(helper.run('/bin/sh', ['-c', 'yes | head -c 1200000; sleep 5'], 10_000));
      assert.match(err.message, /output over 1048576 bytes/);
      assert.equal(await helper.run(PRINTF, ['next'], 5_000), 'next');
    } finally {
      await helper.close();
    }
  });

  test('close() ends the helpers; a later request starts one again', async () => {
    const helper = new MountHelper();
    await helper.run(PRINTF, ['x'], 5_000);
    const [pid] = helper.pids();
    assert.ok(pid !== undefined);
    await helper.close();
    assert.equal(alive(pid), false);
    assert.deepEqual(helper.pids(), []);
    assert.equal(await helper.run(PRINTF, ['again'], 5_000), 'again');
    await helper.close();
  });
});

describe('MountHelper in a process of its own', () => {
  const moduleUrl = new URL('../../../src/volume/mount-helper.ts', import.meta.url).href;
  const script = (then: string): string =>
    `import { MountHelper } from ${JSON.stringify(moduleUrl)};
     const h = new MountHelper();
     await h.run('${PRINTF}', ['x'], 5000);
     console.log(h.pids()[0]);
     ${then}`;

  async function runNode(
    code: string,
    killAfterLine: boolean,
  ): Promise<{ pid: number; exit: number | null }> {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      cwd: path.dirname(fileURLToPath(import.meta.url)),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    try {
      const pid = await new Promise<number>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const line = out.split('\n')[0];
          if (out.includes('\n') && line) resolve(Number(line));
        });
        child.on('exit', () => reject(new Error(`exited before it printed the helper's pid: ${out}`)));
      });
      if (killAfterLine) child.kill('SIGKILL');
      const exit = await new Promise<number | null>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
        else child.on('exit', (code) => resolve(code));
      });
      return { pid, exit };
    } finally {
      clearTimeout(timer);
    }
  }

  test('the helper never keeps the kubelet running, and ends when it exits', async () => {
    const { pid, exit } = await runNode(script(''), false);
    assert.equal(exit, 0);
    assert.ok(await gone(pid), 'the helper outlived its kubelet');
  });

  test('the helper ends when its kubelet is killed', async () => {
    const { pid } = await runNode(script('setInterval(() => undefined, 1000);'), true);
    assert.ok(await gone(pid), 'the helper outlived its killed kubelet');
  });
});
