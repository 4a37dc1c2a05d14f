/**
 * Admission: a pod that sets a sysctl the node does not allow (neither safe nor
 * in allowedUnsafeSysctls), or a namespaced one of a namespace it shares with the host, is rejected
 * at admission: Failed with reason SysctlForbidden, its containers never created (upstream:
 * pkg/kubelet/sysctl; e2e test/e2e/common/node/sysctl.go "should reject invalid sysctls" and
 * "should not launch unsafe, but not explicitly enabled sysctls on the node").
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { busybox, ClusterNode, makePod } from '../helpers/conformance.js';

const ns = `it-conf-sysctl-${process.pid}`;

describe('conformance: sysctls at admission', () => {
  let node: ClusterNode | undefined;

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  test('unsafe sysctls the node does not allow, and net sysctls with the host network, are SysctlForbidden', async () => {
    const n = (node = await ClusterNode.start(ns, ['--allowed-unsafe-sysctls=kernel.shm*']));
    const withSysctls = (name: string, sysctls: string[], hostNetwork = false) =>
      makePod(ns, name, {
        hostNetwork,
        securityContext: { sysctls: sysctls.map((s) => ({ name: s, value: '1' })) },
        containers: [busybox('c', 'exec sleep 3600')],
      });
    await n.createPod(withSysctls('unsafe', ['kernel.shm_rmid_forced', 'kernel.msgmax']));
    await n.createPod(withSysctls('host-net', ['net.ipv4.tcp_syncookies'], true));
    await n.createPod(withSysctls('allowed', ['kernel.shm_rmid_forced', 'kernel.shmmni']));

    const unsafe = await n.waitPod('unsafe', 'Failed', (p) => p.status?.phase === 'Failed');
    assert.equal(unsafe.status?.reason, 'SysctlForbidden');
    assert.equal(
      unsafe.status?.message,
      'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted',
    );
    const event = await n.waitEvent('unsafe', 'SysctlForbidden');
    assert.equal(event.type, 'Warning');
    assert.equal(event.message, 'forbidden sysctl: "kernel.msgmax" not allowlisted');

    const hostNet = await n.waitPod('host-net', 'Failed', (p) => p.status?.phase === 'Failed');
    assert.equal(hostNet.status?.reason, 'SysctlForbidden');
    assert.equal(
      hostNet.status?.message,
      'Pod was rejected: forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled',
    );
    for (const name of ['unsafe', 'host-net'])
      assert.equal((await n.cri.podContainers(ns, name)).length, 0, `${name}: nothing was created`);

    const allowed = await n.waitPod('allowed', 'Running', (p) => p.status?.phase === 'Running', 60_000);
    assert.equal((await n.exec(allowed, 'c', ['sysctl', '-n', 'kernel.shmmni'])).trim(), '1');
  });
});
