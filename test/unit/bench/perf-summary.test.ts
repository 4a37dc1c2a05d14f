import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  folderOf,
  JS_KIND,
  kindOf,
  parsePerfScript,
  summarizePerf,
  tierOf,
  type PerfSample,
} from '../../../bench/perf-summary.js';

const BUNDLE = 'file:///opt/tskubelet/dist/kubelet/kubelet.cjs';

// `perf script -F tid,ip,sym,dso`: a thread id line, then frames leaf first, tab-indented.
const SCRIPT = [
  ' 100 ',
  '\t    1401838 Builtins_LoadIC (/usr/bin/node)',
  `\t    7faa44309f5c JS:^syncPod ${BUNDLE}:75:120 (/tmp/perf-100.map)`,
  `\t    7faa44309f00 JS:^run ${BUNDLE}:65:10 (/tmp/perf-100.map)`,
  '',
  ' 100 ',
  '\tffffffff9a000000 do_writev ([kernel.kallsyms])',
  '\tffffffff9a000100 __x64_sys_writev ([kernel.kallsyms])',
  '\t    7faa1 writev (/usr/lib/x86_64-linux-gnu/libc.so.6)',
  `\t    7faa44309f5c JS:~write ${BUNDLE}:60:5649 (/tmp/perf-100.map)`,
  '',
  ' 100 ',
  '\t    b495f8 v8::internal::Scavenger::ScavengePage (/usr/bin/node)',
  `\t    7faa44309f5c JS:*decode ${BUNDLE}:147:9 (/tmp/perf-100.map)`,
  '',
  ' 100 ',
  '\t    14c05fb uv__io_poll (/usr/bin/node)',
  '',
  ' 101 ',
  '\t    b495f8 v8::internal::ConcurrentMarking::RunMajor (/usr/bin/node)',
  '',
].join('\n');

const sources: Record<string, string> = {
  '75:120': 'src/kuberuntime/runtime-manager.ts',
  '65:10': 'src/podworkers/pod-workers.ts',
  '60:5649': 'src/lib/http2/client-connection.ts',
  '147:9': 'src/cri/generated/runtime/v1/api.ts',
};
const sourceOf = (line: number, column: number): string => sources[`${line}:${column}`] ?? '?';

describe('perf-summary', () => {
  const samples = parsePerfScript(SCRIPT);

  test('reads each sample: its thread and its frames, leaf first, addresses dropped', () => {
    assert.equal(samples.length, 5);
    assert.deepEqual(
      samples.map((s) => s.tid),
      [100, 100, 100, 100, 101],
    );
    assert.equal(samples[0]!.frames[0], 'Builtins_LoadIC (/usr/bin/node)');
    assert.equal(samples[0]!.frames.length, 3);
  });

  test('a sample is of the first kind its stack matches; the kernel kinds need a kernel leaf', () => {
    assert.deepEqual(samples.slice(0, 4).map(kindOf), [
      JS_KIND,
      'kernel: socket and pipe writes',
      'garbage collection',
      JS_KIND,
    ]);
    const userWritev: PerfSample = { tid: 1, frames: ['writev (/usr/lib/libc.so.6)', 'x (/usr/bin/node)'] };
    assert.equal(kindOf(userWritev), JS_KIND);
  });

  test('the tier of the deepest JavaScript frame', () => {
    assert.deepEqual(samples.slice(0, 4).map(tierOf), [
      'baseline (Sparkplug)',
      'interpreted (Ignition)',
      'optimized (TurboFan)',
      'no JavaScript frame',
    ]);
  });

  test("the main thread's samples go to the deepest bundle frame's file; other threads only by thread", () => {
    const s = summarizePerf(samples, 100, sourceOf);
    assert.equal(s.mainSamples, 4);
    assert.deepEqual(Object.fromEntries(s.byThread), { 'main thread (100)': 4, 'thread 101': 1 });
    assert.deepEqual(Object.fromEntries(s.byFile), {
      'src/kuberuntime/runtime-manager.ts': 1,
      'src/lib/http2/client-connection.ts': 1,
      'src/cri/generated/runtime/v1/api.ts': 1,
      "no JavaScript frame: node's and V8's C++ (callbacks, promise jobs)": 1,
    });
    assert.equal(s.byFunction.get('src/kuberuntime/runtime-manager.ts syncPod'), 1);
    assert.equal(s.byFolder.get('src/lib'), 1);
  });

  test('folders: src/ and node_modules/ by their first level, a scoped package by its scope and name', () => {
    assert.equal(folderOf('src/lib/http2/hpack.ts'), 'src/lib');
    assert.equal(
      folderOf('node_modules/@bufbuild/protobuf/dist/esm/wire/binary-encoding.js'),
      'node_modules/@bufbuild/protobuf',
    );
    assert.equal(folderOf('node_modules/yaml/dist/index.js'), 'node_modules/yaml');
    assert.equal(folderOf('node (node:net)'), 'node (its own modules)');
  });
});
