/**
 * systemd-logind over the system D-Bus, the calls the node shutdown manager makes (upstream:
 * pkg/kubelet/nodeshutdown/systemd/inhibit_linux.go): read InhibitDelayMaxUSec, raise it with a
 * logind.conf drop-in and a SIGHUP through systemd, take a `delay` shutdown inhibitor lock (a file
 * descriptor logind hands over the bus: holding it open is holding the lock), and watch for
 * PrepareForShutdown, from logind's own connection only (any local user may send one; see
 * monitorShutdown).
 *
 * The bus is the one DBUS_SYSTEM_BUS_ADDRESS names, else the system bus socket, as every D-Bus
 * client does; tests put a bus of their own there. Receiving the lock's descriptor needs unix fd
 * passing, which dbus-next gets from the usocket addon.
 */
import { closeSync, constants, openSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import dbus from 'dbus-next';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';

const log = logger('nodeshutdown');

const LOGIND_SERVICE = 'org.freedesktop.login1';
const LOGIND_OBJECT = '/org/freedesktop/login1';
const LOGIND_INTERFACE = 'org.freedesktop.login1.Manager';
const BUS_SERVICE = 'org.freedesktop.DBus';
const BUS_OBJECT = '/org/freedesktop/DBus';
const SYSTEMD_SERVICE = 'org.freedesktop.systemd1';
const SYSTEMD_OBJECT = '/org/freedesktop/systemd1';
const SYSTEMD_INTERFACE = 'org.freedesktop.systemd1.Manager';

export const DEFAULT_SYSTEM_BUS_ADDRESS = 'unix:path=/var/run/dbus/system_bus_socket';
/** Upstream's logindConfigDirectory and kubeletLogindConf. */
export const LOGIND_CONFIG_DIRECTORY = '/etc/systemd/logind.conf.d/';
export const KUBELET_LOGIND_CONF = '99-kubelet.conf';
/** Every call on the bus is bounded; logind answers in milliseconds. */
const CALL_TIMEOUT_MS = 10_000;
/** Ignored PrepareForShutdown signals are logged at most this often. */
const SPOOF_LOG_INTERVAL_MS = 60_000;

/**
 * The lock's descriptor as one that child processes do not inherit. A descriptor received over the
 * bus is not close-on-exec (the usocket addon's recvmsg passes no MSG_CMSG_CLOEXEC), so every child
 * spawned while the lock is held, the long-lived mount helper among them, would keep a copy and
 * with it the lock after the kubelet lets go. The lock is the write end of logind's FIFO: opening
 * it again through /proc gives another write end, which node opens close-on-exec, and the
 * inherited one is closed at once, in the same tick, before anything can be spawned.
 */
function closeOnExec(fd: number): number {
  let reopened: number;
  try {
    reopened = openSync(`/proc/self/fd/${fd}`, constants.O_WRONLY | constants.O_NONBLOCK);
  } catch (err) {
    log.warn('Inhibitor lock descriptor could not be made close-on-exec; child processes may hold the lock', {
      err: errorMessage(err),
    });
    return fd;
  }
  closeSync(fd);
  return reopened;
}

/** The descriptor of a held inhibitor lock. */
export type InhibitLock = number;

/** What the shutdown manager needs of logind (upstream's dbusInhibiter); a fake stands in for unit tests. */
export interface DbusInhibiter {
  currentInhibitDelayMs(): Promise<number>;
  inhibitShutdown(): Promise<InhibitLock>;
  releaseInhibitLock(lock: InhibitLock): void;
  reloadLogindConf(): Promise<void>;
  /** Calls onEvent with PrepareForShutdown's argument; onClosed once when the bus connection ends. */
  monitorShutdown(onEvent: (shuttingDown: boolean) => void, onClosed: (err: Error) => void): Promise<void>;
  overrideInhibitDelay(inhibitDelayMaxMs: number): Promise<void>;
  close(): void;
}

export interface LogindDBusOptions {
  /** A D-Bus address; DBUS_SYSTEM_BUS_ADDRESS or the system bus socket by default. */
  busAddress?: string;
  /** Where the drop-in goes; upstream's /etc/systemd/logind.conf.d/ by default. */
  logindConfigDirectory?: string;
}

/** Connects to the system bus; rejects (bounded) when there is none to talk to. */
export async function connectLogind(opts: LogindDBusOptions = {}): Promise<LogindDBus> {
  const busAddress = opts.busAddress ?? (process.env.DBUS_SYSTEM_BUS_ADDRESS || DEFAULT_SYSTEM_BUS_ADDRESS);
  // negotiateUnixFd is read by the session factory too, which is the one that takes an address.
  const bus = dbus.sessionBus({ busAddress, negotiateUnixFd: true } as dbus.SessionBusOptions);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no answer from the D-Bus at ${busAddress} within ${CALL_TIMEOUT_MS} ms`));
    }, CALL_TIMEOUT_MS);
    const onConnect = () => {
      cleanup();
      resolve();
    };
    const onError = (err: unknown) => {
      cleanup();
      reject(new Error(`cannot connect to the D-Bus at ${busAddress}: ${errorMessage(err)}`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      bus.off('connect', onConnect);
      bus.off('error', onError);
    };
    bus.on('connect', onConnect);
    bus.on('error', onError);
  }).catch((err: unknown) => {
    // An error after this point must not become an uncaught 'error' event.
    bus.on('error', () => undefined);
    try {
      bus.disconnect();
    } catch {
      // the stream never opened
    }
    throw err;
  });
  return new LogindDBus(bus, opts.logindConfigDirectory ?? LOGIND_CONFIG_DIRECTORY);
}

export class LogindDBus implements DbusInhibiter {
  private closed = false;
  /** The unique name (`:1.23`) that owns org.freedesktop.login1 now; signals from any other are ignored. */
  private logindOwner: string | undefined;
  private spoofed = { count: 0, lastLoggedMs: -Infinity };

  constructor(
    private readonly bus: dbus.MessageBus,
    private readonly logindConfigDirectory: string,
  ) {}

  async currentInhibitDelayMs(): Promise<number> {
    let reply: dbus.Message;
    try {
      reply = await this.call({
        destination: LOGIND_SERVICE,
        path: LOGIND_OBJECT,
        interface: 'org.freedesktop.DBus.Properties',
        member: 'Get',
        signature: 'ss',
        body: [LOGIND_INTERFACE, 'InhibitDelayMaxUSec'],
      });
    } catch (err) {
      throw new Error(`failed reading InhibitDelayMaxUSec property from logind: ${errorMessage(err)}`, {
        cause: err,
      });
    }
    const variant = reply.body[0] as dbus.Variant | undefined;
    if (variant?.signature !== 't')
      throw new Error('InhibitDelayMaxUSec from logind is not a uint64 as expected');
    return Number(variant.value as bigint) / 1000;
  }

  async inhibitShutdown(): Promise<InhibitLock> {
    let reply: dbus.Message;
    try {
      reply = await this.call({
        destination: LOGIND_SERVICE,
        path: LOGIND_OBJECT,
        interface: LOGIND_INTERFACE,
        member: 'Inhibit',
        signature: 'ssss',
        body: ['shutdown', 'kubelet', 'Kubelet needs time to handle node shutdown', 'delay'],
      });
    } catch (err) {
      throw new Error(`failed creating systemd inhibitor: ${errorMessage(err)}`, { cause: err });
    }
    const fd = reply.body[0];
    if (reply.signature !== 'h' || typeof fd !== 'number' || fd < 0)
      throw new Error('failed storing inhibit lock file descriptor: logind answered no descriptor');
    return closeOnExec(fd);
  }

  releaseInhibitLock(lock: InhibitLock): void {
    try {
      closeSync(lock);
    } catch (err) {
      throw new Error(`unable to close systemd inhibitor lock: ${errorMessage(err)}`, { cause: err });
    }
  }

  /** SIGHUP to systemd-logind through systemd's KillUnit, which makes it read its configuration again. */
  async reloadLogindConf(): Promise<void> {
    try {
      await this.call({
        destination: SYSTEMD_SERVICE,
        path: SYSTEMD_OBJECT,
        interface: SYSTEMD_INTERFACE,
        member: 'KillUnit',
        signature: 'ssi',
        body: ['systemd-logind.service', 'all', 1],
      });
    } catch (err) {
      throw new Error(`unable to reload logind conf: ${errorMessage(err)}`, { cause: err });
    }
  }

  /**
   * Watches PrepareForShutdown from logind alone. Any connection on the system bus may emit a signal
   * with logind's path and interface, and may address one to the kubelet's unique name, which no
   * match rule filters; what tells logind apart is the sender field, which the bus daemon fills in
   * with the unique name of the connection that sent it. So the signal is honoured only when that
   * name is the current owner of org.freedesktop.login1 (GetNameOwner, then NameOwnerChanged, which
   * only the daemon itself can send, so a restarted logind is followed).
   */
  async monitorShutdown(
    onEvent: (shuttingDown: boolean) => void,
    onClosed: (err: Error) => void,
  ): Promise<void> {
    // Subscribed before asking, so an owner change between the two is not missed.
    await this.addMatch(
      `type='signal',sender='${BUS_SERVICE}',interface='${BUS_SERVICE}',member='NameOwnerChanged',path='${BUS_OBJECT}',arg0='${LOGIND_SERVICE}'`,
    );
    let ownerChanges = 0;
    this.bus.on('message', (msg: dbus.Message) => {
      if (msg.type !== dbus.MessageType.SIGNAL) return;
      if (isLogindOwnerChange(msg)) {
        ownerChanges++;
        const newOwner = msg.body[2] as string;
        log.info('The owner of the logind bus name changed', {
          name: LOGIND_SERVICE,
          oldOwner: msg.body[1],
          newOwner,
        });
        this.logindOwner = newOwner === '' ? undefined : newOwner;
        return;
      }
      if (
        msg.interface !== LOGIND_INTERFACE ||
        msg.member !== 'PrepareForShutdown' ||
        msg.path !== LOGIND_OBJECT
      )
        return;
      if (this.logindOwner === undefined || msg.sender !== this.logindOwner) {
        this.reportSpoofedSignal(msg.sender);
        return;
      }
      const active = msg.body[0];
      if (typeof active !== 'boolean') return;
      onEvent(active);
    });
    const changesBefore = ownerChanges;
    const owner = await this.getNameOwner(LOGIND_SERVICE);
    // A NameOwnerChanged that came while the answer was on its way is as new or newer.
    if (ownerChanges === changesBefore) this.logindOwner = owner;
    if (owner === undefined) log.warn('No connection owns the logind bus name', { name: LOGIND_SERVICE });
    // The daemon matches a well-known sender against its current owner, so other connections'
    // broadcasts are not even delivered; the check above stays for signals addressed to us.
    await this.addMatch(
      `type='signal',sender='${LOGIND_SERVICE}',interface='${LOGIND_INTERFACE}',member='PrepareForShutdown',path='${LOGIND_OBJECT}'`,
    );
    let reported = false;
    const closed = (err: Error) => {
      if (reported || this.closed) return;
      reported = true;
      onClosed(err);
    };
    this.bus.on('error', (err: unknown) => closed(new Error(errorMessage(err))));
    const stream = (this.bus as unknown as { _connection?: { stream?: NodeJS.EventEmitter } })._connection
      ?.stream;
    stream?.on('close', () => closed(new Error('the D-Bus connection closed')));
  }

  /** Writes upstream's drop-in, which raises InhibitDelayMaxSec once logind reads it. */
  async overrideInhibitDelay(inhibitDelayMaxMs: number): Promise<void> {
    const dir = this.logindConfigDirectory;
    try {
      await mkdir(dir, { recursive: true, mode: 0o755 });
    } catch (err) {
      throw new Error(`failed creating ${dir} directory: ${errorMessage(err)}`, { cause: err });
    }
    const text = `# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=${Math.round(inhibitDelayMaxMs / 1000)}\n`;
    const file = path.join(dir, KUBELET_LOGIND_CONF);
    try {
      // Written whole then renamed, so logind never reads half a file.
      await writeFile(`${file}.tmp`, text, { mode: 0o644 });
      await rename(`${file}.tmp`, file);
    } catch (err) {
      throw new Error(`failed writing logind shutdown inhibit override file ${file}: ${errorMessage(err)}`, {
        cause: err,
      });
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.bus.on('error', () => undefined);
    try {
      this.bus.disconnect();
    } catch {
      // already gone
    }
  }

  private async addMatch(rule: string): Promise<void> {
    await this.call({
      destination: BUS_SERVICE,
      path: BUS_OBJECT,
      interface: BUS_SERVICE,
      member: 'AddMatch',
      signature: 's',
      body: [rule],
    });
  }

  /** The unique name owning a well-known one; undefined when none does. */
  private async getNameOwner(name: string): Promise<string | undefined> {
    try {
      const reply = await this.call({
        destination: BUS_SERVICE,
        path: BUS_OBJECT,
        interface: BUS_SERVICE,
        member: 'GetNameOwner',
        signature: 's',
        body: [name],
      });
      const owner = reply.body[0];
      if (typeof owner !== 'string' || owner === '')
        throw new Error(`GetNameOwner(${name}) answered no name`);
      return owner;
    } catch (err) {
      if ((err as { type?: string }).type === 'org.freedesktop.DBus.Error.NameHasNoOwner') return undefined;
      throw new Error(`unable to find the owner of ${name}: ${errorMessage(err)}`, { cause: err });
    }
  }

  /**
   * Says that a PrepareForShutdown was ignored, naming the sender: at once for the first, then at
   * most once a minute with a count, so a local user cannot flood the log with them.
   */
  private reportSpoofedSignal(sender: string | undefined): void {
    this.spoofed.count++;
    const nowMs = Date.now();
    if (nowMs - this.spoofed.lastLoggedMs < SPOOF_LOG_INTERVAL_MS) return;
    log.warn('Ignored a PrepareForShutdown signal that logind did not send', {
      sender: sender ?? '',
      logindOwner: this.logindOwner ?? '',
      ignored: this.spoofed.count,
    });
    this.spoofed = { count: 0, lastLoggedMs: nowMs };
  }

  private async call(fields: dbus.MessageLike): Promise<dbus.Message> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const reply = await Promise.race([
        this.bus.call(new dbus.Message(fields)),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`${fields.member} got no answer within ${CALL_TIMEOUT_MS} ms`)),
            CALL_TIMEOUT_MS,
          );
        }),
      ]);
      if (!reply) throw new Error(`${fields.member} got no answer`);
      return reply;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** NameOwnerChanged for logind's name, from the bus daemon (no other connection can send as it). */
function isLogindOwnerChange(msg: dbus.Message): boolean {
  return (
    msg.sender === BUS_SERVICE &&
    msg.interface === BUS_SERVICE &&
    msg.member === 'NameOwnerChanged' &&
    msg.path === BUS_OBJECT &&
    msg.body[0] === LOGIND_SERVICE &&
    typeof msg.body[2] === 'string'
  );
}
