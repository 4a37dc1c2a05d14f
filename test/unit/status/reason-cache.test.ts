import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReasonCache } from '../../../src/status/reason-cache.js';

describe('ReasonCache', () => {
  it('records start failures and forgets them once the container starts', () => {
    const cache = new ReasonCache();
    cache.update('u1', {
      failed: true,
      results: [
        {
          action: 'StartContainer',
          target: 'app',
          reason: 'CrashLoopBackOff',
          message: 'back-off 10s restarting failed container=app',
        },
        { action: 'StartContainer', target: 'web', reason: 'ErrImagePull', message: 'not found' },
        { action: 'KillContainer', target: 'old', reason: 'KillContainerError', message: 'ignored' },
      ],
    });
    assert.deepEqual(cache.get('u1', 'app'), {
      reason: 'CrashLoopBackOff',
      message: 'back-off 10s restarting failed container=app',
    });
    assert.equal(cache.get('u1', 'old'), undefined, 'only StartContainer results count');
    cache.update('u1', { failed: false, results: [{ action: 'StartContainer', target: 'app' }] });
    assert.equal(cache.get('u1', 'app'), undefined);
    assert.deepEqual([...cache.forPod('u1').keys()], ['web']);
    assert.equal(cache.forPod('u2').size, 0);
  });

  it('drops the oldest entries beyond its bound', () => {
    const cache = new ReasonCache(2);
    cache.add('u', 'a', 'ErrImagePull', '');
    cache.add('u', 'b', 'ErrImagePull', '');
    cache.add('u', 'a', 'ImagePullBackOff', '');
    cache.add('u', 'c', 'ErrImagePull', '');
    assert.equal(cache.size, 2);
    assert.equal(cache.get('u', 'b'), undefined);
    assert.equal(cache.get('u', 'a')?.reason, 'ImagePullBackOff');
  });
});
