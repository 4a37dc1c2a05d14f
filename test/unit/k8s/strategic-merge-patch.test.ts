import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  createTwoWayMergePatch,
  goJson,
  type JsonObject,
  type PatchSchema,
} from '../../../src/k8s/strategic-merge-patch.js';
import { strategicMergePatch, type PatchSchema as ServerSchema } from '../../apiserver/patch.js';

const schema: PatchSchema = { conditions: { mergeKey: 'type' }, podIPs: { mergeKey: 'ip' } };

const cond = (type: string, status: string, extra: JsonObject = {}): JsonObject => ({
  type,
  status,
  lastProbeTime: null,
  ...extra,
});

function stripNulls(v: JsonObject): JsonObject {
  return JSON.parse(JSON.stringify(v, (_k, x: unknown) => (x === null ? undefined : x))) as JsonObject;
}

describe('createTwoWayMergePatch', () => {
  it('diffs lists by merge key, with $setElementOrder and $patch: delete, in upstream order', () => {
    const original = {
      conditions: [cond('B', 'False'), cond('A', 'True'), cond('C', 'True')],
      phase: 'Pending',
    };
    const modified = {
      conditions: [cond('A', 'True'), cond('B', 'True'), cond('D', 'True')],
      phase: 'Running',
    };
    const patch = createTwoWayMergePatch(original, modified, schema);
    assert.equal(
      goJson(patch),
      '{"$setElementOrder/conditions":[{"type":"A"},{"type":"B"},{"type":"D"}],' +
        '"conditions":[{"status":"True","type":"B"},{"lastProbeTime":null,"status":"True","type":"D"},{"$patch":"delete","type":"C"}],' +
        '"phase":"Running"}',
    );
  });

  it('sends only the order when only the order changed, nothing when nothing did', () => {
    const a = { conditions: [cond('A', 'True'), cond('B', 'True')] };
    const b = { conditions: [cond('B', 'True'), cond('A', 'True')] };
    assert.deepEqual(createTwoWayMergePatch(a, b, schema), {
      '$setElementOrder/conditions': [{ type: 'B' }, { type: 'A' }],
    });
    assert.deepEqual(createTwoWayMergePatch(a, structuredClone(a), schema), {});
  });

  it('replaces lists without a merge key whole, nulls removed fields, takes a new list as it is', () => {
    const patch = createTwoWayMergePatch(
      { containerStatuses: [{ name: 'a', ready: false }], message: 'm' },
      { containerStatuses: [{ name: 'a', ready: true }], podIPs: [{ ip: '10.0.0.1' }] },
      schema,
    );
    assert.deepEqual(patch, {
      containerStatuses: [{ name: 'a', ready: true }],
      podIPs: [{ ip: '10.0.0.1' }],
      message: null,
    });
  });

  it("round-trips through the test API server's strategic merge", () => {
    const cases: [JsonObject, JsonObject][] = [
      [
        {
          conditions: [cond('X', 'True'), cond('Y', 'False', { reason: 'r' })],
          podIPs: [{ ip: '1' }, { ip: '2' }],
        },
        { conditions: [cond('Y', 'True'), cond('Z', 'False')], podIPs: [{ ip: '2' }], hostIP: 'h' },
      ],
      [{ phase: 'Pending' }, { phase: 'Running', conditions: [cond('A', 'True')] }],
      [
        { conditions: [cond('A', 'True'), cond('B', 'True')] },
        { conditions: [cond('B', 'True'), cond('A', 'True')] },
      ],
    ];
    for (const [original, modified] of cases) {
      const patch = createTwoWayMergePatch(original, modified, schema);
      const applied = strategicMergePatch(
        original,
        JSON.parse(goJson(patch)) as JsonObject,
        schema as ServerSchema,
      );
      // A null in a patch deletes the field: in Go the zero value it stands for reads back as null.
      assert.deepEqual(stripNulls(applied), stripNulls(modified));
    }
  });

  it('escapes <, > and & as Go does', () => {
    assert.equal(goJson({ m: 'a<b>&c' }), '{"m":"a\\u003cb\\u003e\\u0026c"}');
  });
});
