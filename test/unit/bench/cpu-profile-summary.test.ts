import assert from 'node:assert/strict';
import { SourceMap } from 'node:module';
import { describe, test } from 'node:test';
import {
  frameNamer,
  sampleWeightsUs,
  summarizeCpuProfile,
  type Profile,
} from '../../../bench/cpu-profile-summary.js';

const byUrl = frameNamer(() => undefined);

describe('cpu-profile-summary', () => {
  test('a sample weighs the time to the next one, capped at twice the median interval', () => {
    // Median interval 1000 µs: the 68 ms wait before the fourth sample counts as 2 ms, not 68.
    assert.deepEqual(sampleWeightsUs([0, 1000, 1000, 68_000, 1000, 900]), [1000, 1000, 2000, 1000, 900, 0]);
  });

  test('self and inclusive time by function and module, in the window, without idle', () => {
    const profile: Profile = {
      startTime: 0,
      endTime: 10_000,
      nodes: [
        { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 }, children: [2, 4] },
        {
          id: 2,
          callFrame: { functionName: 'sync', url: 'file:///x/src/a.js', lineNumber: 9 },
          children: [3],
        },
        { id: 3, callFrame: { functionName: 'parse', url: 'file:///x/src/b.js', lineNumber: 0 } },
        { id: 4, callFrame: { functionName: '(idle)', url: '', lineNumber: -1 } },
      ],
      // t = 1000, 2000, 3000, 4000, 5000 µs
      samples: [3, 3, 2, 4, 3],
      timeDeltas: [1000, 1000, 1000, 1000, 1000],
    };
    const all = summarizeCpuProfile(profile, byUrl);
    assert.equal(all.totalUs, 3000, 'three busy samples of 1 ms (the last weighs 0: nothing follows it)');
    assert.equal(all.selfByFunction.get('parse src/b.js:1'), 2000);
    assert.equal(all.selfByFunction.get('sync src/a.js:10'), 1000);
    assert.equal(all.selfByModule.get('src/b.js'), 2000);
    assert.equal(all.inclusive.get('sync src/a.js:10'), 3000);
    assert.equal(all.inclusive.get('(root)'), 3000);
    assert.deepEqual(
      [...all.byProjectFile],
      [
        ['src/b.js', 2000],
        ['src/a.js', 1000],
      ],
      "each sample to its deepest project file: parse's in src/b.js, below sync in src/a.js",
    );
    const window = summarizeCpuProfile(profile, byUrl, 0.0015, 0.0035);
    assert.equal(window.totalUs, 2000, 'only the samples at 2 and 3 ms');
  });

  test("a bundle's frames are named by the source file and line its map gives", () => {
    // One mapping: line 0, column 4 of the bundle is line 41 (0-based 40) of src/kubelet/kubelet.ts.
    const map = new SourceMap({
      version: 3,
      file: 'main.js',
      sources: ['../../src/kubelet/kubelet.ts'],
      sourcesContent: [],
      sourceRoot: '',
      names: [],
      mappings: 'IAwCA',
    });
    const named = frameNamer((url) => (url.endsWith('/dist/kubelet/main.js') ? map : undefined));
    assert.deepEqual(
      named({
        functionName: 'syncLoop',
        url: 'file:///w/dist/kubelet/main.js',
        lineNumber: 0,
        columnNumber: 4,
      }),
      { name: 'syncLoop src/kubelet/kubelet.ts:41', module: 'src/kubelet/kubelet.ts' },
    );
    assert.deepEqual(named({ functionName: 'emit', url: 'node:events', lineNumber: 470, columnNumber: 2 }), {
      name: 'emit node:events:471',
      module: 'node:events',
    });
    assert.deepEqual(named({ functionName: '(garbage collector)', url: '', lineNumber: -1 }), {
      name: '(garbage collector)',
      module: '(garbage collector)',
    });
  });
});
