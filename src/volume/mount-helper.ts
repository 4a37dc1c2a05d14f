/**
 * Runs mount(8) and umount(8) for the kubelet through a long-lived /bin/sh of its own (the mount
 * helper), so that a mount costs the kubelet a write to a pipe rather than a fork of the whole node
 * process (child_process forks it: about 2.6 ms of the main thread for each command, and the child's
 * teardown of the copied address space). The helper is small, so its own fork for each command is
 * cheap. Node has no mount(2).
 *
 * The protocol: one request at a time per helper, written to its stdin as one shell command line in
 * which every word is single-quoted (inside single quotes nothing is special, newlines included; a
 * quote is written '\''), with stdin from /dev/null and stderr into stdout, then a line
 * `\n<marker> <exit status>\n` whose marker is random per helper and numbered per request, so no
 * output of the command can pass for it. Up to MAX_HELPERS helpers run at once; further requests wait.
 *
 * Failures: every request has a time bound from the moment it is asked (a queued one included); on
 * timeout the helper's process group (the shell and its command) is killed and another helper serves
 * the next request. A helper that dies fails the request it was running and is replaced on the next
 * one. A helper that cannot start, or dies before it answered anything, leaves its requests to
 * child_process (the way before) for START_RETRY_MS. The helper ends when its stdin closes: at
 * close(), and when the kubelet exits, however it exits.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { monotonicMs } from '../lib/clock.js';
import { KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';

const log = logger('volume');

/** Helpers running at once: requests are serialised within a helper, so a hung one holds back only its own. */
export const MAX_HELPERS = 2;
/** After a helper failed to start, how long commands go through child_process before one is tried again. */
export const START_RETRY_MS = 60_000;
/** A command's output beyond this is an error, as child_process's default maxBuffer makes it. */
export const MAX_OUTPUT_BYTES = 1024 * 1024;
/** How long close() waits for a helper to exit after its stdin closed, before it kills it. */
const CLOSE_GRACE_MS = 1_000;

/** A command that did not exit 0: `exitStatus` its exit status, `killed` when the time bound ended it. */
export class CommandError extends KubeletError {
  constructor(
    message: string,
    readonly output: string,
    readonly exitStatus?: number,
    readonly killed = false,
  ) {
    super('COMMAND_FAILED', message);
    this.name = 'CommandError';
  }
}

/** Runs a program with arguments; resolves with its stdout and stderr when it exits 0. */
export interface CommandRunner {
  run(command: string, args: string[], timeoutMs: number): Promise<string>;
  /** Stops what the runner keeps running; a later run starts it again. */
  close(): Promise<void>;
}

/** The word s for /bin/sh, taken literally whatever it holds. */
export function quoteShellWord(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

// A program's name: a shell builtin that changes the shell's own state would run inside the helper.
const PROGRAM_NAME = /^[A-Za-z0-9_/][A-Za-z0-9_.+/-]*$/;
const STATEFUL_BUILTINS = new Set(
  'exit exec eval trap set unset cd read wait . shift export readonly alias unalias ulimit umask hash local return break continue command getopts'.split(
    ' ',
  ),
);

function checkRequest(command: string, args: string[]): void {
  if (!PROGRAM_NAME.test(command) || STATEFUL_BUILTINS.has(command)) {
    throw new CommandError(`mount helper: ${JSON.stringify(command)} is not a program name`, '');
  }
  for (const a of args) {
    if (a.includes('\0')) throw new CommandError(`argument ${JSON.stringify(a)} contains a NUL byte`, '');
  }
}

/** One command through child_process, as the kubelet ran every mount before the helper. */
export function spawnCommand(command: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: timeoutMs, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      if (!err) {
        resolve(output);
        return;
      }
      const e = err as Error & { code?: number | string; killed?: boolean };
      reject(new CommandError(e.message, output, typeof e.code === 'number' ? e.code : undefined, e.killed));
    });
  });
}

interface Request {
  command: string;
  args: string[];
  resolve: (output: string) => void;
  reject: (err: Error) => void;
  deadlineMs: number;
  timer: NodeJS.Timeout;
}

type HelperDone = (h: HelperProcess, running: Request | undefined, why: string) => void;

/** One /bin/sh serving one request at a time. */
class HelperProcess {
  readonly pid: number;
  private readonly marker = `tsk-mount-helper-${randomBytes(12).toString('hex')}`;
  private seq = 0;
  private current: { req: Request; end: string; output: string } | undefined;
  private stderrTail = '';
  /** Requests it answered: one that dies before its first answer is taken for one that cannot start. */
  answered = 0;
  exited = false;
  /** Ended by the pool (a timeout, too much output, close): its exit is no news. */
  private killed = false;

  private constructor(
    private readonly child: ChildProcess & { pid: number },
    private readonly done: HelperDone,
  ) {
    this.pid = child.pid;
    for (const s of [child.stdin, child.stdout, child.stderr]) {
      // A helper that died makes its pipes fail; its exit handler is what reports it.
      s?.on('error', () => undefined);
      // Never what keeps the kubelet alive: a request in flight has its timer for that.
      (s as { unref?: () => void } | null)?.unref?.();
    }
    child.unref();
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => this.onOutput(chunk));
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-1024);
    });
    // A shell that died on its own may leave its command running, holding the pipes open: end the
    // group (its pid names it while a member is left). What is in the pipes still arrives, then
    // 'close': the answer may be there when the shell has exited.
    child.on('exit', () => {
      if (!this.killed) this.killGroup();
    });
    child.on('close', (code, signal) => this.onChildExit(code, signal));
  }

  /** A running helper, or undefined when the shell could not be started. */
  static start(shell: string, done: HelperDone): HelperProcess | undefined {
    let child: ChildProcess;
    try {
      // detached: a process group of its own, so a timeout kills the shell and its command together.
      child = spawn(shell, [], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    } catch (err) {
      log.v(2, 'Mount helper could not be started', { shell, err: String(err) });
      return undefined;
    }
    if (child.pid === undefined) {
      // The spawn error follows as an event; nothing else is left to listen for it.
      child.on('error', (err) => log.v(2, 'Mount helper could not be started', { shell, err: err.message }));
      return undefined;
    }
    child.on('error', () => undefined);
    return new HelperProcess(child as ChildProcess & { pid: number }, done);
  }

  get busy(): boolean {
    return this.current !== undefined;
  }

  isRunning(req: Request): boolean {
    return this.current?.req === req;
  }

  send(req: Request): void {
    const end = `\n${this.marker}-${++this.seq} `;
    this.current = { req, end, output: '' };
    const words = [req.command, ...req.args].map(quoteShellWord).join(' ');
    // printf's %s takes the marker as data; $? is still the command's status there.
    this.child.stdin?.write(`${words} </dev/null 2>&1; printf '%s%s\\n' ${quoteShellWord(end)} "$?"\n`);
  }

  /** Ends the helper, and the request in flight with it (returned with its output so far). */
  kill(): { req: Request; output: string } | undefined {
    const running = this.current;
    this.current = undefined;
    this.exited = true;
    this.killed = true;
    this.killGroup();
    return running;
  }

  /** EOF on stdin: the shell exits when its command has; killed after CLOSE_GRACE_MS if not. */
  async close(): Promise<void> {
    if (this.exited) return;
    this.killed = true;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.stdin?.end();
    const timer = setTimeout(() => this.killGroup(), CLOSE_GRACE_MS);
    await exited;
    clearTimeout(timer);
    const cur = this.current;
    this.current = undefined;
    if (cur) {
      clearTimeout(cur.req.timer);
      cur.req.reject(new CommandError(`mount helper closed while ${cur.req.command} ran`, cur.output));
    }
  }

  private onOutput(chunk: string): void {
    const cur = this.current;
    if (!cur) return;
    const from = Math.max(0, cur.output.length - cur.end.length);
    cur.output += chunk;
    const at = cur.output.indexOf(cur.end, from);
    if (at < 0) {
      if (cur.output.length > MAX_OUTPUT_BYTES) {
        this.kill();
        clearTimeout(cur.req.timer);
        cur.req.reject(new CommandError(`output over ${MAX_OUTPUT_BYTES} bytes`, cur.output.slice(0, 4096)));
        this.done(this, undefined, '');
      }
      return;
    }
    const newline = cur.output.indexOf('\n', at + cur.end.length);
    if (newline < 0) return;
    const code = Number(cur.output.slice(at + cur.end.length, newline));
    const output = cur.output.slice(0, at);
    this.current = undefined;
    this.answered++;
    clearTimeout(cur.req.timer);
    if (code === 0) cur.req.resolve(output);
    else cur.req.reject(new CommandError(`exit status ${code}`, output, code));
    this.done(this, undefined, '');
  }

  private onChildExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.killed) return;
    const running = this.current;
    this.current = undefined;
    this.exited = true;
    const stderr = this.stderrTail.trim();
    const how = signal ?? `exit status ${code ?? '?'}`;
    this.done(
      this,
      running?.req,
      `the mount helper (pid ${this.pid}) exited (${how})${stderr ? `: ${stderr}` : ''}`,
    );
  }

  private killGroup(): void {
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/**
 * The kubelet's runner of mount(8) and umount(8): the helpers above, and child_process while none can
 * run. The options are for tests.
 */
export class MountHelper implements CommandRunner {
  private readonly helpers: HelperProcess[] = [];
  private readonly queue: Request[] = [];
  private spawnUntilMs = 0;
  private readonly shell: string;
  private readonly maxHelpers: number;
  private readonly startRetryMs: number;

  constructor(opts: { shell?: string; maxHelpers?: number; startRetryMs?: number } = {}) {
    this.shell = opts.shell ?? '/bin/sh';
    this.maxHelpers = opts.maxHelpers ?? MAX_HELPERS;
    this.startRetryMs = opts.startRetryMs ?? START_RETRY_MS;
  }

  /** The helpers' process IDs, for tests and diagnostics. */
  pids(): number[] {
    return this.helpers.map((h) => h.pid);
  }

  run(command: string, args: string[], timeoutMs: number): Promise<string> {
    try {
      checkRequest(command, args);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    if (monotonicMs() < this.spawnUntilMs) return spawnCommand(command, args, timeoutMs);
    return new Promise((resolve, reject) => {
      const req: Request = {
        command,
        args,
        resolve,
        reject,
        deadlineMs: monotonicMs() + timeoutMs,
        timer: setTimeout(() => this.timeOut(req), timeoutMs),
      };
      this.queue.push(req);
      this.pump();
    });
  }

  async close(): Promise<void> {
    for (const req of this.queue.splice(0)) {
      clearTimeout(req.timer);
      req.reject(new CommandError(`mount helper closed before ${req.command} ran`, ''));
    }
    await Promise.all(this.helpers.splice(0).map((h) => h.close()));
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let helper = this.helpers.find((h) => !h.busy && !h.exited);
      if (!helper && this.helpers.length < this.maxHelpers) {
        helper = HelperProcess.start(this.shell, (h, running, why) => this.onHelperDone(h, running, why));
        if (!helper) {
          this.fallBack(`${this.shell} could not be started`);
          return;
        }
        this.helpers.push(helper);
      }
      if (!helper) return;
      const req = this.queue.shift();
      if (req) helper.send(req);
    }
  }

  /** A helper answered, or ended (exited, or killed for too much output); why says how it exited. */
  private onHelperDone(h: HelperProcess, running: Request | undefined, why: string): void {
    if (h.exited) {
      const i = this.helpers.indexOf(h);
      if (i >= 0) this.helpers.splice(i, 1);
    }
    if (running) {
      clearTimeout(running.timer);
      running.reject(new CommandError(`${why}; ${running.command} may or may not have run`, ''));
    }
    if (why !== '') {
      if (h.answered === 0) this.fallBack(why);
      else log.warn('Mount helper exited; the next command starts another', { reason: why });
    }
    this.pump();
  }

  /** Until startRetryMs from now, commands go through child_process: those queued too. */
  private fallBack(why: string): void {
    log.warn('Mount helper unavailable; running mount commands through child_process', {
      reason: why,
      retryInMs: this.startRetryMs,
    });
    this.spawnUntilMs = monotonicMs() + this.startRetryMs;
    for (const req of this.queue.splice(0)) {
      clearTimeout(req.timer);
      spawnCommand(req.command, req.args, Math.max(1, Math.ceil(req.deadlineMs - monotonicMs()))).then(
        req.resolve,
        req.reject,
      );
    }
  }

  private timeOut(req: Request): void {
    const queued = this.queue.indexOf(req);
    if (queued >= 0) {
      this.queue.splice(queued, 1);
      req.reject(new CommandError('timed out waiting for a mount helper', '', undefined, true));
      return;
    }
    const h = this.helpers.find((x) => x.isRunning(req));
    if (!h) return;
    const running = h.kill();
    this.helpers.splice(this.helpers.indexOf(h), 1);
    req.reject(new CommandError('timed out', running?.output ?? '', undefined, true));
    this.pump();
  }
}
