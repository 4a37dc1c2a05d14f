/**
 * Test equipment: a private D-Bus (Debian's dbus-daemon, session configuration) with a stand-in for
 * systemd-logind on it. It owns org.freedesktop.login1 and answers what the kubelet asks of
 * org.freedesktop.login1.Manager: the InhibitDelayMaxUSec property, Inhibit (with a real descriptor:
 * the write end of a FIFO, whose read end sees EOF once every copy is closed, which is how logind
 * itself notices a released lock), and the PrepareForShutdown signal, sent when the test says. It
 * also owns org.freedesktop.systemd1 to record KillUnit. Never part of the product.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import dbus from 'dbus-next';

export interface InhibitCall {
  args: unknown[];
  atMs: number;
  /** When the lock's last descriptor closed, once it has. */
  releasedAtMs?: number;
  released: Promise<number>;
}

export class FakeLogind {
  inhibitDelayMaxUSec = 30_000_000n;
  readonly inhibitCalls: InhibitCall[] = [];
  readonly killUnitCalls: unknown[][] = [];
  private readonly sockets: net.Socket[] = [];
  private fifoCount = 0;

  private constructor(
    readonly address: string,
    private readonly daemon: ChildProcess,
    private bus: dbus.MessageBus,
    private readonly dir: string,
  ) {}

  /** Starts dbus-daemon and puts the stand-in on it (bounded). */
  static async start(): Promise<FakeLogind> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fake-logind-'));
    const daemon = spawn(
      'dbus-daemon',
      ['--session', '--print-address', '--nofork', `--address=unix:dir=${dir}`],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const address = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('dbus-daemon printed no address within 10 s')), 10_000);
      let out = '';
      daemon.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        const line = out.split('\n')[0];
        if (out.includes('\n') && line) {
          clearTimeout(timer);
          resolve(line.trim());
        }
      });
      daemon.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`dbus-daemon exited with ${code}`));
      });
    });
    const fake = new FakeLogind(address, daemon, await FakeLogind.connect(address), dir);
    await fake.takeNames();
    return fake;
  }

  /** The unique name of the stand-in's connection, the sender of its signals. */
  get uniqueName(): string {
    return busName(this.bus);
  }

  /** logind restarting: its connection goes, a new one (another unique name) takes the names. */
  async restart(): Promise<void> {
    this.bus.disconnect();
    this.bus = await FakeLogind.connect(this.address);
    await this.takeNames();
  }

  /**
   * What any local user can do with dbus-send: PrepareForShutdown(active) with logind's path and
   * interface from a connection of its own, both broadcast and addressed to every other connection
   * on the bus (which no match rule filters). Returns once the daemon has passed them all on.
   */
  async spoofPrepareForShutdown(active: boolean): Promise<void> {
    const spoofer = await FakeLogind.connect(this.address);
    try {
      const signal = (destination?: string) => {
        const msg = dbus.Message.newSignal(
          '/org/freedesktop/login1',
          'org.freedesktop.login1.Manager',
          'PrepareForShutdown',
          'b',
          [active],
        );
        if (destination) msg.destination = destination;
        spoofer.send(msg);
      };
      signal();
      const names = await spoofer.call(
        new dbus.Message({
          destination: 'org.freedesktop.DBus',
          path: '/org/freedesktop/DBus',
          interface: 'org.freedesktop.DBus',
          member: 'ListNames',
        }),
      );
      for (const name of (names?.body[0] as string[] | undefined) ?? [])
        if (name.startsWith(':') && name !== busName(spoofer) && name !== busName(this.bus)) signal(name);
      // The daemon handles one connection's messages in order: once this is answered, the
      // signals above have been delivered.
      await spoofer.call(
        new dbus.Message({
          destination: 'org.freedesktop.DBus',
          path: '/org/freedesktop/DBus',
          interface: 'org.freedesktop.DBus',
          member: 'GetId',
        }),
      );
    } finally {
      spoofer.disconnect();
    }
  }

  /** Sends PrepareForShutdown(active) as logind does when a shutdown starts (true) or is cancelled (false). */
  prepareForShutdown(active: boolean): void {
    this.bus.send(
      dbus.Message.newSignal(
        '/org/freedesktop/login1',
        'org.freedesktop.login1.Manager',
        'PrepareForShutdown',
        'b',
        [active],
      ),
    );
  }

  /** Inhibitor locks taken and not yet released. */
  heldLocks(): number {
    return this.inhibitCalls.filter((c) => c.releasedAtMs === undefined).length;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.bus.disconnect();
    this.daemon.kill('SIGTERM');
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** A connection to the daemon, once it has its unique name (bounded). */
  private static async connect(address: string): Promise<dbus.MessageBus> {
    const bus = dbus.sessionBus({ busAddress: address, negotiateUnixFd: true } as dbus.SessionBusOptions);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error('no Hello answer from dbus-daemon within 10 s')),
        10_000,
      );
      bus.once('connect', () => {
        clearTimeout(timer);
        resolve();
      });
      bus.once('error', (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      });
    });
    return bus;
  }

  private async takeNames(): Promise<void> {
    const bus = this.bus;
    bus.addMethodHandler((msg: dbus.Message) => this.handle(msg));
    await bus.requestName('org.freedesktop.login1', 0);
    await bus.requestName('org.freedesktop.systemd1', 0);
  }

  private handle(msg: dbus.Message): boolean {
    if (msg.path === '/org/freedesktop/login1' && msg.interface === 'org.freedesktop.DBus.Properties') {
      if (msg.member === 'Get' && msg.body[1] === 'InhibitDelayMaxUSec') {
        this.bus.send(
          dbus.Message.newMethodReturn(msg, 'v', [new dbus.Variant('t', this.inhibitDelayMaxUSec)]),
        );
        return true;
      }
      return false;
    }
    if (msg.path === '/org/freedesktop/login1' && msg.member === 'Inhibit') {
      this.bus.send(dbus.Message.newMethodReturn(msg, 'h', [this.newLock(msg.body)]));
      return true;
    }
    if (msg.path === '/org/freedesktop/systemd1' && msg.member === 'KillUnit') {
      this.killUnitCalls.push(msg.body);
      this.bus.send(dbus.Message.newMethodReturn(msg, '', []));
      return true;
    }
    return false;
  }

  /** A FIFO: its write end goes to the caller, its read end tells when the caller let go. */
  private newLock(args: unknown[]): number {
    const fifo = path.join(this.dir, `lock-${this.fifoCount++}`);
    execFileSync('mkfifo', [fifo]);
    const readFd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writeFd = openSync(fifo, constants.O_WRONLY);
    const reader = new net.Socket({ fd: readFd, readable: true, writable: false });
    this.sockets.push(reader);
    let markReleased!: (ms: number) => void;
    const call: InhibitCall = {
      args,
      atMs: Date.now(),
      released: new Promise((resolve) => (markReleased = resolve)),
    };
    reader.on('data', () => undefined);
    reader.on('end', () => {
      call.releasedAtMs = Date.now();
      markReleased(call.releasedAtMs);
    });
    this.inhibitCalls.push(call);
    // Our copy goes once the reply (which carries a copy) has surely left.
    setTimeout(() => closeSync(writeFd), 500).unref();
    return writeFd;
  }
}

/** The unique name the daemon gave a connection (dbus-next sets it; its typings omit it). */
function busName(bus: dbus.MessageBus): string {
  return (bus as unknown as { name: string }).name;
}
