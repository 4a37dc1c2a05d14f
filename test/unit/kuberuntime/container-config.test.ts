import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import type { Image } from '../../../src/cri/types.js';
import {
  generateContainerConfig,
  type ContainerConfigOptions,
} from '../../../src/kuberuntime/container-config.js';
import { hashContainer } from '../../../src/kuberuntime/container-hash.js';
import { DEFAULT_MASKED_PATHS, DEFAULT_READONLY_PATHS } from '../../../src/kuberuntime/security-context.js';
import { isKubeletError } from '../../../src/lib/errors.js';

let dir = '';
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'kuberuntime-cc-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function opts(): ContainerConfigOptions {
  return {
    podLogsDir: path.join(dir, 'logs'),
    rootDir: path.join(dir, 'root'),
    nodeName: 'node-a',
    hostIPs: ['192.168.1.10'],
    nodeAllocatable: { cpu: '2', memory: '4Gi' },
    memoryCapacityBytes: 4 * 1024 ** 3,
    cpuCFSQuota: true,
    cpuCFSQuotaPeriodUs: 100_000,
    seccompDefault: false,
    envSources: {},
    randomId: () => 'deadbeef',
  };
}

function pod(container: Container, spec: Partial<Pod['spec']> = {}): Pod {
  return {
    metadata: { name: 'web', namespace: 'prod', uid: 'u-1' },
    spec: { containers: [container], terminationGracePeriodSeconds: 30, ...spec },
  };
}

const image: Image = {
  id: 'sha256:abc',
  repoTags: ['docker.io/library/busybox:latest'],
  repoDigests: [],
  size: 1,
  username: '',
  pinned: false,
};

test('a basic container: metadata, image, command, env, labels, annotations, log path, mounts', async () => {
  const c: Container = {
    name: 'app',
    image: 'busybox',
    command: ['sh', '-c'],
    args: ['echo $(GREETING)'],
    workingDir: '/work',
    env: [{ name: 'GREETING', value: 'hello' }],
    stdin: true,
    tty: true,
  };
  const p = pod(c);
  const cfg = await generateContainerConfig(
    {
      pod: p,
      container: c,
      restartCount: 2,
      imageRef: 'sha256:abc',
      image,
      podIP: '10.0.0.5',
      podIPs: ['10.0.0.5'],
    },
    opts(),
  );
  assert.deepEqual(cfg.metadata, { name: 'app', attempt: 2 });
  assert.deepEqual(cfg.image, { image: 'sha256:abc', userSpecifiedImage: 'busybox' });
  assert.deepEqual(cfg.command, ['sh', '-c']);
  assert.deepEqual(cfg.args, ['echo hello']);
  assert.equal(cfg.workingDir, '/work');
  assert.deepEqual(cfg.envs, [{ key: 'GREETING', value: 'hello' }]);
  assert.equal(cfg.logPath, 'app/2.log');
  assert.equal(cfg.stdin, true);
  assert.equal(cfg.stdinOnce, false);
  assert.equal(cfg.tty, true);
  assert.equal(cfg.labels['io.kubernetes.container.name'], 'app');
  assert.equal(cfg.annotations['io.kubernetes.container.hash'], hashContainer(c));
  assert.equal(cfg.annotations['io.kubernetes.container.restartCount'], '2');
  assert.equal(cfg.annotations['io.kubernetes.container.terminationMessagePath'], '/dev/termination-log');
  assert.equal(cfg.annotations['io.kubernetes.container.terminationMessagePolicy'], 'File');
  assert.equal(cfg.annotations['io.kubernetes.pod.terminationGracePeriod'], '30');

  // The termination message file exists, is world-writable, and is mounted at the message path.
  const hostPath = path.join(dir, 'root/pods/u-1/containers/app/deadbeef');
  assert.deepEqual(cfg.mounts, [
    {
      containerPath: '/dev/termination-log',
      hostPath,
      readonly: false,
      selinuxRelabel: false,
      propagation: 'PROPAGATION_PRIVATE',
    },
  ]);
  assert.equal((await stat(hostPath)).mode & 0o777, 0o666);
  // The container's log folder exists.
  assert.deepEqual(await readdir(path.join(dir, 'logs/prod_web_u-1')), ['app']);
});

test('security context: defaults, image user, masked paths, capabilities, no-new-privs, groups, seccomp', async () => {
  const c: Container = {
    name: 'app',
    image: 'busybox',
    securityContext: {
      capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] },
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
    },
  };
  const p = pod(c, { securityContext: { runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [5000] } });
  const cfg = await generateContainerConfig(
    {
      pod: p,
      container: c,
      restartCount: 0,
      imageRef: 'sha256:abc',
      image: { ...image, uid: { value: 1001 } },
      podIP: '',
      podIPs: [],
    },
    opts(),
  );
  const sc = cfg.linux?.securityContext;
  assert.deepEqual(sc?.capabilities, { addCapabilities: ['NET_ADMIN'], dropCapabilities: ['ALL'] });
  assert.equal(sc?.noNewPrivs, true);
  assert.equal(sc?.readonlyRootfs, true);
  assert.equal(sc?.privileged, false);
  assert.deepEqual(sc?.runAsUser, { value: 1001 });
  assert.deepEqual(sc?.runAsGroup, { value: 3000 });
  assert.deepEqual(sc?.supplementalGroups, [2000, 5000]);
  assert.deepEqual(sc?.maskedPaths, DEFAULT_MASKED_PATHS);
  assert.deepEqual(sc?.readonlyPaths, DEFAULT_READONLY_PATHS);
  assert.deepEqual(sc?.namespaceOptions, { network: 'POD', pid: 'CONTAINER', ipc: 'POD' });
  assert.deepEqual(sc?.seccomp, { profileType: 'Unconfined', localhostRef: '' });

  const priv: Container = {
    name: 'priv',
    image: 'busybox',
    securityContext: { privileged: true, runAsUser: 0 },
  };
  const pcfg = await generateContainerConfig(
    {
      pod: pod(priv, { securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }),
      container: priv,
      restartCount: 0,
      imageRef: 'sha256:abc',
      image,
      podIP: '',
      podIPs: [],
    },
    opts(),
  );
  assert.equal(pcfg.linux?.securityContext?.privileged, true);
  assert.deepEqual(pcfg.linux?.securityContext?.maskedPaths, []);
  assert.deepEqual(pcfg.linux?.securityContext?.readonlyPaths, []);
  assert.deepEqual(pcfg.linux?.securityContext?.runAsUser, { value: 0 });
  assert.equal(pcfg.linux?.securityContext?.seccomp?.profileType, 'RuntimeDefault');
});

test('runAsNonRoot refuses root with upstream messages', async () => {
  const c: Container = { name: 'app', image: 'busybox' };
  const p = pod(c, { securityContext: { runAsNonRoot: true } });
  await assert.rejects(
    generateContainerConfig(
      { pod: p, container: c, restartCount: 0, imageRef: 'sha256:abc', image, podIP: '', podIPs: [] },
      opts(),
    ),
    (err) =>
      isKubeletError(err, 'CREATE_CONTAINER_CONFIG') &&
      /container has runAsNonRoot and image will run as root \(pod: "web_prod\(u-1\)", container: app\)/.test(
        err.message,
      ),
  );
  await assert.rejects(
    generateContainerConfig(
      {
        pod: p,
        container: c,
        restartCount: 0,
        imageRef: 'sha256:abc',
        image: { ...image, username: 'nobody' },
        podIP: '',
        podIPs: [],
      },
      opts(),
    ),
    /image has non-numeric user \(nobody\)/,
  );
  const ok = await generateContainerConfig(
    {
      pod: p,
      container: c,
      restartCount: 0,
      imageRef: 'sha256:abc',
      image: { ...image, uid: { value: 65534 } },
      podIP: '',
      podIPs: [],
    },
    opts(),
  );
  assert.deepEqual(ok.linux?.securityContext?.runAsUser, { value: 65534 });
});

test('resources reach the config', async () => {
  const c: Container = {
    name: 'app',
    image: 'busybox',
    resources: { limits: { cpu: '500m', memory: '64Mi' } },
  };
  const cfg = await generateContainerConfig(
    { pod: pod(c), container: c, restartCount: 0, imageRef: 'sha256:abc', image, podIP: '', podIPs: [] },
    opts(),
  );
  const r = cfg.linux?.resources;
  assert.equal(r?.cpuShares, 512);
  assert.equal(r?.cpuQuota, 50_000);
  assert.equal(r?.cpuPeriod, 100_000);
  assert.equal(r?.memoryLimitInBytes, 64 * 1024 * 1024);
});
