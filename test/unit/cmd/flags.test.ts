import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

import { FLAG_SPECS, flagForField, kubeletUsage, parseKubeletFlags } from '../../../src/cmd/flags.js';
import { knownConfigFields } from '../../../src/cmd/kubelet-configuration.js';
import { isKubeletError } from '../../../src/lib/errors.js';

function overrides(argv: string[]): Record<string, unknown> {
  return Object.fromEntries(parseKubeletFlags(argv).configOverrides.map((o) => [o.field, o.value]));
}

describe('parseKubeletFlags', () => {
  test('--flag=value and --flag value', () => {
    const parsed = parseKubeletFlags([
      '--kubeconfig=/etc/kubelet.conf',
      '--root-dir',
      '/data/kubelet',
      '--max-pods',
      '20',
    ]);
    assert.equal(parsed.flags.kubeConfig, '/etc/kubelet.conf');
    assert.equal(parsed.flags.rootDirectory, '/data/kubelet');
    assert.deepEqual(parsed.configOverrides, [{ flag: 'max-pods', field: 'maxPods', value: 20 }]);
  });

  test('defaults for flags not given', () => {
    const { flags, configOverrides } = parseKubeletFlags([]);
    assert.equal(flags.rootDirectory, '/var/lib/kubelet');
    assert.equal(flags.kubeConfig, '');
    assert.equal(flags.podInfraContainerImage, 'registry.k8s.io/pause:3.9');
    assert.deepEqual(configOverrides, []);
  });

  test('booleans: bare, =true/false and the Go spellings; a following word is not consumed', () => {
    assert.deepEqual(overrides(['--fail-swap-on']), { failSwapOn: true });
    assert.deepEqual(overrides(['--fail-swap-on=false']), { failSwapOn: false });
    assert.deepEqual(overrides(['--fail-swap-on=0']), { failSwapOn: false });
    assert.deepEqual(overrides(['--fail-swap-on=T']), { failSwapOn: true });
    assert.throws(() => parseKubeletFlags(['--fail-swap-on', 'false']), {
      message: 'unknown command "false"',
    });
    assert.throws(() => parseKubeletFlags(['--fail-swap-on=yes']), {
      message:
        'invalid argument "yes" for "--fail-swap-on" flag: strconv.ParseBool: parsing "yes": invalid syntax',
    });
  });

  test('-v forms set logging.verbosity', () => {
    for (const argv of [['-v', '2'], ['-v=2'], ['-v2'], ['--v=2'], ['--v', '2']]) {
      assert.deepEqual(overrides(argv), { 'logging.verbosity': 2 }, argv.join(' '));
    }
  });

  test('-h and --help; grouped shorthands', () => {
    assert.equal(parseKubeletFlags(['-h']).flags.help, true);
    assert.equal(parseKubeletFlags(['--help']).flags.help, true);
    const grouped = parseKubeletFlags(['-hv3']);
    assert.equal(grouped.flags.help, true);
    assert.deepEqual(grouped.configOverrides[0]?.value, 3);
  });

  test('--version, --version=raw, --version=false', () => {
    assert.equal(parseKubeletFlags(['--version']).flags.version, true);
    assert.equal(parseKubeletFlags(['--version=raw']).flags.version, 'raw');
    assert.equal(parseKubeletFlags(['--version=false']).flags.version, false);
  });

  test('underscores are accepted for dashes, as upstream normalises names', () => {
    assert.deepEqual(overrides(['--max_pods=7']), { maxPods: 7 });
  });

  test('the last occurrence of a scalar flag wins', () => {
    assert.deepEqual(overrides(['--max-pods=1', '--max-pods=2']), { maxPods: 2 });
  });

  test('durations are checked at parse time and kept as written', () => {
    assert.deepEqual(overrides(['--sync-frequency=1m30s']), { syncFrequency: '1m30s' });
    assert.throws(() => parseKubeletFlags(['--sync-frequency=abc']), {
      message: 'invalid argument "abc" for "--sync-frequency" flag: time: invalid duration "abc"',
    });
  });

  test('integers: Go base prefixes and int32 range', () => {
    assert.deepEqual(overrides(['--port=0x2800']), { port: 10240 });
    assert.throws(() => parseKubeletFlags(['--max-pods=abc']), {
      message:
        'invalid argument "abc" for "--max-pods" flag: strconv.ParseInt: parsing "abc": invalid syntax',
    });
    assert.throws(() => parseKubeletFlags(['--max-pods=3000000000']), /value out of range/);
    assert.deepEqual(overrides(['--pod-max-pids=3000000000']), { podPidsLimit: 3_000_000_000 });
  });

  test('node labels merge across occurrences', () => {
    const { flags } = parseKubeletFlags(['--node-labels', 'a=1, b=2', '--node-labels=c=3,d']);
    assert.deepEqual(flags.nodeLabels, { a: '1', b: '2', c: '3', d: '' });
  });

  test('taints', () => {
    assert.deepEqual(overrides(['--register-with-taints=dedicated=gpu:NoSchedule,maint:NoExecute']), {
      registerWithTaints: [
        { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
        { key: 'maint', effect: 'NoExecute' },
      ],
    });
    assert.throws(
      () => parseKubeletFlags(['--register-with-taints=a=b:Sometimes']),
      /--register-with-taints.*invalid taint effect/,
    );
    assert.throws(() => parseKubeletFlags(['--register-with-taints=ab']), /invalid taint spec/);
  });

  test('--reserved-memory: nodes split by ";", repeats append, upstream\'s errors', () => {
    assert.deepEqual(
      overrides([
        '--memory-manager-policy=Static',
        '--reserved-memory',
        '0:memory=1Gi,hugepages-2Mi=2Mi;1:memory=512Mi',
        '--reserved-memory=2:memory=1G',
      ]),
      {
        memoryManagerPolicy: 'Static',
        reservedMemory: [
          { numaNode: 0, limits: { memory: '1Gi', 'hugepages-2Mi': '2Mi' } },
          { numaNode: 1, limits: { memory: '512Mi' } },
          { numaNode: 2, limits: { memory: '1G' } },
        ],
      },
    );
    assert.throws(
      () => parseKubeletFlags(['--reserved-memory=memory=1Gi']),
      /invalid argument "memory=1Gi" for "--reserved-memory" flag: the reserved memory has incorrect format, expected numaNodeID:type=quantity\[,type=quantity...\], got memory=1Gi/,
    );
    assert.throws(
      () => parseKubeletFlags(['--reserved-memory=x:memory=1Gi']),
      /failed to convert the NUMA node ID, exptected integer, got x/,
    );
    assert.throws(
      () => parseKubeletFlags(['--reserved-memory=0:cpu=1']),
      /memory type conversion error, unknown type: "cpu"/,
    );
    assert.throws(
      () => parseKubeletFlags(['--reserved-memory=0:memory=lots']),
      /failed to parse the quantatity, expected quantatity, got lots/,
    );
  });

  test('lists, maps and header multimaps', () => {
    assert.deepEqual(overrides(['--cluster-dns=10.0.0.10,10.0.0.11', '--cluster-dns=10.0.0.12']), {
      clusterDNS: ['10.0.0.10', '10.0.0.11', '10.0.0.12'],
    });
    assert.deepEqual(overrides(['--eviction-hard=memory.available<1Gi,nodefs.available<5%']), {
      evictionHard: { 'memory.available': '1Gi', 'nodefs.available': '5%' },
    });
    assert.deepEqual(overrides(['--kube-reserved=cpu=100m,memory=1Gi']), {
      kubeReserved: { cpu: '100m', memory: '1Gi' },
    });
    assert.deepEqual(overrides(['--feature-gates=A=true,B=false']), { featureGates: { A: true, B: false } });
    assert.deepEqual(
      overrides(['--manifest-url-header', 'a:hello,b:again', '--manifest-url-header=b:beautiful']),
      {
        staticPodURLHeader: { a: ['hello'], b: ['again', 'beautiful'] },
      },
    );
    assert.throws(() => parseKubeletFlags(['--kube-reserved=cpu']), /"--kube-reserved" flag: malformed pair/);
    assert.throws(() => parseKubeletFlags(['--feature-gates=A=maybe']), /"--feature-gates" flag/);
    assert.throws(
      () => parseKubeletFlags(['--manifest-url-header=nocolon']),
      /malformed pair, expect string:string/,
    );
  });

  test('unknown flags, missing values and stray arguments are errors naming them', () => {
    assert.throws(
      () => parseKubeletFlags(['--no-such-flag']),
      (err: unknown) => {
        assert.ok(isKubeletError(err, 'INVALID_CONFIG'));
        assert.equal(err.message, 'unknown flag: --no-such-flag');
        return true;
      },
    );
    assert.throws(() => parseKubeletFlags(['-x']), { message: "unknown shorthand flag: 'x' in -x" });
    assert.throws(() => parseKubeletFlags(['--config']), { message: 'flag needs an argument: --config' });
    assert.throws(() => parseKubeletFlags(['-v']), /flag needs an argument/);
    assert.throws(() => parseKubeletFlags(['run']), { message: 'unknown command "run"' });
    assert.throws(() => parseKubeletFlags(['--', 'x']), { message: 'unknown command "x"' });
  });

  test('config-backed flags carry upstream’s deprecation notice, except the logging ones', () => {
    const { warnings } = parseKubeletFlags(['--max-pods=3', '-v=1', '--kubeconfig=/k']);
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0]!,
      /^Flag --max-pods has been deprecated, This parameter should be set via the config file/,
    );
  });

  test('every config flag names a known KubeletConfiguration field, and flagForField maps back', () => {
    const known = new Set(knownConfigFields());
    for (const spec of FLAG_SPECS) {
      if ('field' in spec) {
        assert.ok(known.has(spec.field), `--${spec.name} -> ${spec.field}`);
        assert.equal(flagForField(spec.field), spec.name);
      }
    }
    assert.equal(flagForField('maxPods'), 'max-pods');
    assert.equal(flagForField('podLogsDir'), undefined);
  });

  test('flag names are unique', () => {
    const names = FLAG_SPECS.map((s) => s.name);
    assert.equal(new Set(names).size, names.length);
  });
});

describe('kubeletUsage', () => {
  test('groups flags and shows types and defaults', () => {
    const text = kubeletUsage();
    assert.match(text, /^Usage:\n {2}tskubelet \[flags\]$/m);
    assert.match(text, /^Static pods flags:$/m);
    assert.match(text, /^Container runtime flags:$/m);
    assert.match(text, /--pod-manifest-path string +Path to the directory/);
    assert.match(text, /-v, --v Level +number for the log level verbosity \(default 0\)/);
    assert.match(text, /--sync-frequency duration .*\(default 1m0s\) \[config: syncFrequency\]/);
    for (const spec of FLAG_SPECS) assert.ok(text.includes(`--${spec.name}`), spec.name);
  });

  test('docs/flags.md lists every flag', () => {
    const doc = readFileSync(new URL('../../../docs/flags.md', import.meta.url), 'utf8');
    for (const spec of FLAG_SPECS)
      assert.ok(doc.includes(`\`--${spec.name}\``), `docs/flags.md lacks --${spec.name}`);
  });
});
