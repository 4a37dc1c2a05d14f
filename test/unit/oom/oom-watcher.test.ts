/**
 * The OOM watcher: cAdvisor's oomparser rules on kernel messages as the kernel writes them
 * (mm/oom_kill.c), upstream's SystemOOM event only for OOMs outside any memory cgroup, and the
 * reader against the machine's real /dev/kmsg (opened, read to its end, stopped on abort).
 */
import assert from 'node:assert/strict';
import { access, constants } from 'node:fs/promises';
import { describe, it } from 'node:test';
import {
  drainKmsg,
  kmsgMessage,
  OomParser,
  runOomWatcher,
  systemOomEvent,
  type OomInstance,
} from '../../../src/oom/oom-watcher.js';
import { realClock } from '../../../src/lib/clock.js';

/** A read function over records, as /dev/kmsg gives them: one a call; an Error with a code thrown as is. */
function recordReader(records: (string | string[] | Error)[]): {
  read: (into: Buffer) => number;
  calls: () => number;
} {
  let calls = 0;
  return {
    read: (into) => {
      const next = records[calls++];
      if (next === undefined) return 0;
      if (next instanceof Error) throw next;
      return into.write(typeof next === 'string' ? next : next.join('\n'));
    },
    calls: () => calls,
  };
}

function errnoError(code: string): Error {
  return Object.assign(new Error(code), { code });
}

function feedAll(lines: string[]): OomInstance[] {
  const p = new OomParser();
  return lines.map((l) => p.feed(l)).filter((o): o is OomInstance => o !== undefined);
}

describe('OOM watcher', () => {
  it('takes the message text of a /dev/kmsg record, without its continuation lines', () => {
    assert.equal(
      kmsgMessage(
        '6,11551,12661875552,-;stress invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0\n SUBSYSTEM=x',
      ),
      'stress invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0',
    );
    assert.equal(kmsgMessage('no header here'), undefined);
  });

  it('a global OOM (5.0+ kernel summary without oom_memcg) records SystemOOM with the victim', () => {
    const [oom, ...rest] = feedAll([
      'eth0: link up',
      'stress invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0',
      'Mem-Info:',
      'oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice/user-0.slice,task=stress,pid=4242,uid=0',
      'Out of memory: Killed process 4242 (stress) total-vm:1049128kB, anon-rss:1000000kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:2000kB oom_score_adj:0',
    ]);
    assert.equal(rest.length, 0);
    assert.deepEqual(oom, {
      pid: 4242,
      processName: 'stress',
      containerName: '/',
      victimContainerName: '/',
      constraint: '',
    });
    assert.deepEqual(systemOomEvent(oom!), {
      type: 'Warning',
      reason: 'SystemOOM',
      message: 'System OOM encountered, victim process: stress, pid: 4242',
    });
  });

  it('a container over its memory limit (oom_memcg set) records nothing on the node', () => {
    const [oom] = feedAll([
      'sh invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=1000',
      'oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-abc.scope,mems_allowed=0,oom_memcg=/kubepods/burstable/pod1234,task_memcg=/kubepods/burstable/pod1234/abc,task=sh,pid=77,uid=0',
    ]);
    assert.equal(oom?.victimContainerName, '/kubepods/burstable/pod1234');
    assert.equal(oom?.containerName, '/kubepods/burstable/pod1234/abc');
    assert.equal(oom?.constraint, 'CONSTRAINT_MEMCG');
    assert.equal(systemOomEvent(oom!), undefined);
  });

  it('older kernels: "Task in ... killed as a result of limit of ..." names the cgroups', () => {
    const [oom] = feedAll([
      'java invoked oom-killer: gfp_mask=0x24000c0, order=0, oom_score_adj=0',
      'Task in /docker/abc killed as a result of limit of /docker/abc',
      'Killed process 99 (java) total-vm:100kB',
    ]);
    assert.equal(oom?.victimContainerName, '/docker/abc');
    assert.equal(systemOomEvent(oom!), undefined);
  });

  it('without the process line the message is the bare "System OOM encountered"', () => {
    assert.deepEqual(
      systemOomEvent({
        pid: 0,
        processName: '',
        containerName: '/',
        victimContainerName: '/',
        constraint: '',
      }),
      { type: 'Warning', reason: 'SystemOOM', message: 'System OOM encountered' },
    );
  });

  it('reads the real /dev/kmsg to its end and stops on abort', async (t) => {
    try {
      await access('/dev/kmsg', constants.R_OK);
    } catch {
      // Containers without /dev/kmsg, or without the right to read it, cannot run this part.
      t.skip('/dev/kmsg is not readable on this machine');
      return;
    }
    const controller = new AbortController();
    const done = runOomWatcher(
      {
        nodeRef: { kind: 'Node', name: 'n', uid: 'n' },
        recordEvent: () => undefined,
        clock: realClock,
        pollMs: 50,
      },
      controller.signal,
    );
    await new Promise((r) => setTimeout(r, 300));
    controller.abort();
    const stopped = await Promise.race([
      done.then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), 5000)),
    ]);
    assert.ok(stopped, 'the watcher stops within 5 s of the abort');
  });

  it('a log it cannot open is reported and the watcher returns', async () => {
    await runOomWatcher(
      {
        nodeRef: { kind: 'Node', name: 'n', uid: 'n' },
        recordEvent: () => assert.fail('no event'),
        clock: realClock,
        kmsgPath: '/nonexistent/kmsg',
      },
      new AbortController().signal,
    );
  });

  describe('reading the log (drainKmsg)', () => {
    const buffer = Buffer.alloc(8192);

    it('hands over the message of each record, in order, and says the log ended at a 0-byte read', () => {
      const seen: string[] = [];
      const r = recordReader(['6,1,100,-;first', ['6,2,200,-;second', ' SUBSYSTEM=x'], 'no separator']);
      assert.equal(
        drainKmsg(r.read, buffer, (m) => seen.push(m), 100),
        'empty',
      );
      assert.deepEqual(seen, ['first', 'second'], 'a malformed record is passed over');
      assert.equal(r.calls(), 4);
    });

    it('ends at EAGAIN (nothing more yet), passes over EPIPE (records overwritten) and throws other errors', () => {
      const seen: string[] = [];
      const r = recordReader([
        errnoError('EPIPE'),
        '6,5,100,-;after the gap',
        errnoError('EAGAIN'),
        '6,6,1,-;later',
      ]);
      assert.equal(
        drainKmsg(r.read, buffer, (m) => seen.push(m), 100),
        'empty',
      );
      assert.deepEqual(seen, ['after the gap']);
      assert.equal(r.calls(), 3, 'nothing is read after EAGAIN');
      const failing = recordReader([errnoError('EIO')]);
      assert.throws(() => drainKmsg(failing.read, buffer, () => undefined, 100), /EIO/);
    });

    it('reads at most maxRecords in one call and says more may be left', () => {
      const seen: string[] = [];
      const r = recordReader(['6,1,1,-;a', '6,2,1,-;b', '6,3,1,-;c']);
      assert.equal(
        drainKmsg(r.read, buffer, (m) => seen.push(m), 2),
        'more',
      );
      assert.deepEqual(seen, ['a', 'b']);
      assert.equal(
        drainKmsg(r.read, buffer, (m) => seen.push(m), 2),
        'empty',
      );
      assert.deepEqual(seen, ['a', 'b', 'c']);
    });
  });
});
