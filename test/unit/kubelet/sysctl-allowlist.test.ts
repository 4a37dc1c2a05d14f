import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import {
  normalizeSysctlName,
  safeSysctlAllowlist,
  SysctlAllowlist,
} from '../../../src/kubelet/sysctl-allowlist.js';

function pod(sysctls: string[], spec: Partial<Pod['spec']> = {}): Pod {
  return {
    metadata: { name: 'p' },
    spec: {
      containers: [],
      securityContext: { sysctls: sysctls.map((name) => ({ name, value: '1' })) },
      ...spec,
    },
  };
}

test('the safe set depends on the kernel that namespaced each sysctl', () => {
  assert.deepEqual(safeSysctlAllowlist('4.4.0'), [
    'kernel.shm_rmid_forced',
    'net.ipv4.ip_local_port_range',
    'net.ipv4.tcp_syncookies',
    'net.ipv4.ping_group_range',
    'net.ipv4.ip_unprivileged_port_start',
    'net.ipv4.ip_local_reserved_ports',
  ]);
  assert.equal(safeSysctlAllowlist('6.1.0-13-amd64').length, 10);
});

test('safe sysctls are admitted; others are SysctlForbidden with upstream messages', () => {
  const list = SysctlAllowlist.forNode([]);
  assert.deepEqual(list.admit(pod(['kernel.shm_rmid_forced', 'net/ipv4/ip_local_port_range'])), {
    admit: true,
  });
  assert.deepEqual(list.admit(pod([])), { admit: true });
  assert.deepEqual(list.admit(pod(['kernel.msgmax'])), {
    admit: false,
    reason: 'SysctlForbidden',
    message: 'forbidden sysctl: "kernel.msgmax" not allowlisted',
  });
  // A net sysctl with the host's network, an IPC one with the host's IPC namespace.
  assert.deepEqual(list.admit(pod(['net.ipv4.tcp_syncookies'], { hostNetwork: true })), {
    admit: false,
    reason: 'SysctlForbidden',
    message: 'forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled',
  });
  assert.deepEqual(list.admit(pod(['kernel.shm_rmid_forced'], { hostIPC: true })), {
    admit: false,
    reason: 'SysctlForbidden',
    message: 'forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled',
  });
});

test('allowedUnsafeSysctls: names and prefix patterns, namespaced ones only', () => {
  const list = SysctlAllowlist.forNode(['kernel.msg*', 'net.core.somaxconn', 'fs.mqueue.*']);
  assert.deepEqual(
    list.admit(pod(['kernel.msgmax', 'kernel.msgmnb', 'net.core.somaxconn', 'fs.mqueue.msg_max'])),
    {
      admit: true,
    },
  );
  assert.equal(list.admit(pod(['kernel.sem'])).admit, false);
  assert.throws(
    () => SysctlAllowlist.forNode(['kernel.panic']),
    /the sysctls "kernel.panic" are not known to be namespaced/,
  );
  assert.throws(() => SysctlAllowlist.forNode(['Kernel.Msg*']), /must have at most 253 characters/);
  assert.equal(normalizeSysctlName('net/ipv4/conf/eth0.100/forwarding'), 'net.ipv4.conf.eth0/100.forwarding');
  assert.equal(normalizeSysctlName('net.ipv4.ip_forward'), 'net.ipv4.ip_forward');
});
