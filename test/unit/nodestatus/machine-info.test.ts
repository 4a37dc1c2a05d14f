import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  parseMemTotalBytes,
  parseOsReleasePrettyName,
  readMachineInfo,
  rootFsCapacityBytes,
} from '../../../src/nodestatus/machine-info.js';
import { fakeMachineHost } from './fixtures.js';

describe('machine info', () => {
  it('reads the machine as cAdvisor does', async () => {
    const info = await readMachineInfo(fakeMachineHost());
    assert.deepEqual(info, {
      numCores: 2,
      memoryCapacityBytes: 24684092 * 1024,
      machineID: '3d1219c7c4c5404aaa1f6d2a48adfda4',
      systemUUID: '3d1219c7c4c5404aaa1f6d2a48adfda4',
      bootID: 'bd552fd1-3a8b-424d-995d-37e744b88677',
      kernelVersion: '6.1.0-test-amd64',
      osImage: 'Debian GNU/Linux 12 (bookworm)',
      hugePages: [
        { pageSizeKiB: 1048576, numPages: 0 },
        { pageSizeKiB: 2048, numPages: 0 },
      ],
    });
  });

  it('takes the DMI product UUID when it can read it, and copes without os-release or huge pages', async () => {
    const host = fakeMachineHost({
      '/sys/class/dmi/id/product_uuid': 'EC2A1B2C-0000-1111-2222-333344445555\n',
      '/etc/os-release': undefined,
      '/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages': undefined,
      '/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages': undefined,
    });
    const info = await readMachineInfo(host);
    assert.equal(info.systemUUID, 'EC2A1B2C-0000-1111-2222-333344445555');
    assert.equal(info.osImage, 'Linux');
    assert.deepEqual(info.hugePages, []);
  });

  it('parses meminfo and os-release', () => {
    assert.equal(parseMemTotalBytes('MemTotal:        1024 kB\n'), 1024 * 1024);
    assert.throws(() => parseMemTotalBytes('nothing'), /MemTotal/);
    assert.equal(
      parseOsReleasePrettyName("NAME=x\nPRETTY_NAME='Alpine Linux v3.19'\n"),
      'Alpine Linux v3.19',
    );
    assert.equal(parseOsReleasePrettyName('PRETTY_NAME=Plain\n'), 'Plain');
    assert.equal(parseOsReleasePrettyName('NAME=x\n'), 'Linux');
  });

  it('measures the root dir, or its nearest existing parent', async () => {
    const seen: string[] = [];
    const host = {
      ...fakeMachineHost(),
      fsCapacityBytes: async (dir: string) => {
        seen.push(dir);
        if (dir !== '/var') throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
        return 1000;
      },
    };
    assert.equal(await rootFsCapacityBytes('/var/lib/kubelet', host), 1000);
    assert.deepEqual(seen, ['/var/lib/kubelet', '/var/lib', '/var']);
  });

  it('reads this machine', async () => {
    const info = await readMachineInfo();
    assert.ok(info.numCores > 0);
    assert.ok(info.memoryCapacityBytes > 0);
    assert.ok(info.bootID.length > 0);
    assert.ok((await rootFsCapacityBytes('/tmp/does/not/exist')) > 0);
  });
});
