/**
 * Node log query (`/logs/?query=`, NodeLogQuery + enableSystemLogQuery), as upstream's
 * kubelet_server_journal.go: the query's parsing and validation with upstream's texts, journalctl's
 * arguments, and the handler over a temporary log folder: files, the service→file heuristics, a
 * journalctl that is killed when the client leaves or the deadline passes.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, describe, test } from 'node:test';
import { startKubeletServer, type KubeletServer } from '../../../src/server/kubelet-server.js';
import {
  aggregateFieldErrors,
  journalctlArgs,
  parseNodeLogQuery,
  validateNodeLogQuery,
} from '../../../src/server/node-log-query.js';
import { request, testConfig, testHost } from './server-kit.js';

const dir = mkdtempSync(join(tmpdir(), 'node-log-query-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const logs = join(dir, 'var-log');
mkdirSync(join(logs, 'svc-dir'), { recursive: true });
writeFileSync(join(logs, 'kubelet.log'), 'kubelet line 1\nkubelet line 2\n');
writeFileSync(join(logs, 'svc-file.log'), 'from svc-file.log\n');
writeFileSync(join(logs, 'svc-dir', 'svc-dir.log'), 'from svc-dir/svc-dir.log\n');

function parse(qs: string) {
  return parseNodeLogQuery(new URLSearchParams(qs));
}

async function validationOf(qs: string): Promise<string> {
  const parsed = parse(qs);
  assert.equal(parsed.errors.length, 0, `parse errors for ${qs}: ${parsed.errors.join('; ')}`);
  assert.ok(parsed.query, `no query for ${qs}`);
  return aggregateFieldErrors(await validateNodeLogQuery(parsed.query, logs));
}

describe('parsing the query (upstream newNodeLogQuery)', () => {
  test('no query parameters is not a query: the plain /logs/ listing answers', () => {
    assert.deepEqual(parse(''), { errors: [] });
    assert.deepEqual(parse('foo=bar'), { errors: [] });
  });

  test('a value with / or \\ is a file, anything else a service', () => {
    const q = parse('query=kubelet&query=/kubelet.log&query=a\\b&query=containerd').query!;
    assert.deepEqual(q.services, ['kubelet', 'containerd']);
    assert.deepEqual(q.files, ['/kubelet.log', 'a\\b']);
  });

  test("bad values, each in upstream's words, aggregated as apimachinery does", () => {
    assert.equal(
      aggregateFieldErrors(parse('query=%20%20').errors),
      'query: Invalid value: []string{"  "}: query cannot be empty',
    );
    assert.equal(
      aggregateFieldErrors(parse('query=k&sinceTime=yesterday').errors),
      'sinceTime: Invalid value: "yesterday": invalid time format',
    );
    assert.equal(
      aggregateFieldErrors(parse('query=k&boot=x&tailLines=1.5').errors),
      '[boot: Invalid value: "x": strconv.Atoi: parsing "x": invalid syntax, ' +
        'tailLines: Invalid value: "1.5": strconv.Atoi: parsing "1.5": invalid syntax]',
    );
    assert.equal(
      aggregateFieldErrors(parse('query=k&tailLines=99999999999999999999').errors),
      'tailLines: Invalid value: "99999999999999999999": strconv.Atoi: parsing "99999999999999999999": value out of range',
    );
    assert.equal(
      aggregateFieldErrors(parse('query=k&untilTime=2024-01-02T03:04:05').errors),
      'untilTime: Invalid value: "2024-01-02T03:04:05": invalid time format',
    );
  });

  test('RFC 3339 times with fractions and offsets parse', () => {
    const q = parse('query=k&sinceTime=2024-01-02T03:04:05.5Z&untilTime=2024-01-02T05:04:05%2B02:00').query!;
    assert.ok(q.sinceTime && q.untilTime);
  });
});

describe('validating it (upstream nodeLogQuery.validate)', () => {
  test('a service name with unsafe characters, too long, or too many services', async () => {
    assert.equal(
      await validationOf('query=a;b'),
      'query: Invalid value: "a;b": input contains unsupported characters',
    );
    assert.equal(
      await validationOf(`query=${'s'.repeat(257)}`),
      `query: Invalid value: "${'s'.repeat(257)}": length must be less than 100`,
    );
    assert.equal(
      await validationOf('query=a&query=b&query=c&query=d&query=e'),
      'query: Too many: 5: must have at most 4 items',
    );
  });

  test('options without a query, a file and a service, two files, a file with options', async () => {
    assert.equal(await validationOf('tailLines=4'), 'query: Required value: cannot be empty with options');
    assert.equal(
      await validationOf('query=/kubelet.log&query=kubelet'),
      'query: Invalid value: "[/kubelet.log], [kubelet]": cannot specify a file and service',
    );
    assert.equal(
      await validationOf('query=/a&query=/b'),
      'query: Invalid value: []string{"/a", "/b"}: cannot specify more than one file',
    );
    assert.equal(
      await validationOf('query=/kubelet.log&tailLines=3'),
      'query: Invalid value: []string{"/kubelet.log"}: cannot specify file with options',
    );
  });

  test('a file that does not exist is named as Go stat names it, inside the log folder', async () => {
    assert.equal(
      await validationOf('query=../../etc/shadow'),
      `query: Invalid value: []string{"../../etc/shadow"}: stat ${logs}/etc/shadow: no such file or directory`,
    );
    assert.equal(await validationOf('query=/kubelet.log'), '');
  });

  test('time order, boot, tailLines and pattern', async () => {
    assert.equal(
      await validationOf('query=k&sinceTime=2024-01-02T03:04:05Z&untilTime=2024-01-01T00:00:00Z'),
      'untilTime: Invalid value: 2024-01-01 00:00:00 +0000 UTC: must be after `sinceTime`',
    );
    assert.equal(await validationOf('query=k&boot=1'), 'boot: Invalid value: 1: must be less than 1');
    assert.equal(await validationOf('query=k&boot=-2'), '');
    assert.equal(
      await validationOf('query=k&tailLines=100001'),
      'tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive',
    );
    assert.equal(
      await validationOf('query=k&pattern=a(b'),
      'pattern: Invalid value: "a(b": error parsing regexp: missing closing ): `a(b`',
    );
    assert.equal(
      await validationOf('query=k&pattern=x[a'),
      'pattern: Invalid value: "x[a": error parsing regexp: missing closing ]: `[a`',
    );
    assert.equal(
      await validationOf('query=k&pattern=(?=a)'),
      'pattern: Invalid value: "(?=a)": error parsing regexp: invalid or unsupported Perl syntax: `(?=`',
    );
    assert.equal(await validationOf('query=k&pattern=^I[0-9]{4}.*error$'), '');
  });
});

describe("journalctl's arguments (upstream getLoggingCmd)", () => {
  test('the fixed ones, then each option in upstream order', () => {
    const q = parse(
      'query=kubelet&query=containerd&sinceTime=2024-01-02T03:04:05Z&untilTime=2024-01-03T13:14:15Z' +
        '&tailLines=10&pattern=err&boot=-1',
    ).query!;
    assert.deepEqual(journalctlArgs(q, ['kubelet', 'containerd']), [
      '--utc',
      '--no-pager',
      '--output=short-precise',
      '--since=2024-1-2 3:4:5',
      // Upstream passes sinceTime here too (a slip in getLoggingCmd); the until time is what is meant.
      '--until=2024-1-3 13:14:15',
      '--pager-end',
      '--lines=10',
      '--unit=kubelet',
      '--unit=containerd',
      '--grep=err',
      '--boot',
      '-1',
    ]);
  });

  test('times given with an offset are passed in UTC (journalctl runs with TZ=UTC)', () => {
    const q = parse('query=k&sinceTime=2024-01-02T03:04:05%2B02:00').query!;
    assert.deepEqual(journalctlArgs(q, ['k']), [
      '--utc',
      '--no-pager',
      '--output=short-precise',
      '--since=2024-1-2 1:4:5',
      '--unit=k',
    ]);
  });
});

/** A stand-in journalctl: lists no units, and for a query prints its arguments then runs until killed. */
function fakeJournalctl(pidFile: string): string {
  const p = join(dir, `fake-journalctl-${Math.random().toString(36).slice(2)}`);
  writeFileSync(
    p,
    `#!/bin/sh\nif [ "$1" = "--field" ]; then echo fake-unit.service; exit 0; fi\n` +
      `echo $$ > ${pidFile}\necho "args: $*"\necho "TZ=$TZ"\nexec sleep 60\n`,
  );
  chmodSync(p, 0o755);
  return p;
}

/** The body as bytes (gzip), within 10 s. */
function rawRequest(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, path, headers, rejectUnauthorized: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(parts) }));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer to ${path} within 10 s`)));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) assert.fail(`${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function withServer(
  opts: { gate?: boolean; field?: boolean; journalctlPath?: string; timeoutMs?: number },
  body: (s: KubeletServer) => Promise<void>,
): Promise<void> {
  const s = await startKubeletServer(testHost(), {
    config: testConfig({
      featureGates: opts.gate === false ? {} : { NodeLogQuery: true },
      enableSystemLogQuery: opts.field ?? true,
    }),
    nodeName: 'n',
    certDirectory: join(dir, 'cert'),
    nodeLogsDir: logs,
    ...(opts.journalctlPath ? { journalctlPath: opts.journalctlPath } : {}),
    ...(opts.timeoutMs ? { nodeLogQueryTimeoutMs: opts.timeoutMs } : {}),
  });
  try {
    await body(s);
  } finally {
    await s.close();
  }
}

describe('/logs/?query= on the kubelet API', () => {
  test('without NodeLogQuery or enableSystemLogQuery the query is ignored: the folder is listed', async () => {
    for (const opts of [{ gate: false }, { field: false }]) {
      await withServer(opts, async (s) => {
        const r = await request(s.port, '/logs/?query=/kubelet.log');
        assert.equal(r.status, 200);
        assert.match(r.body, /<a href="kubelet.log">kubelet.log<\/a>/);
      });
    }
  });

  test('a file query serves the file; bad requests are 400 and 406 with upstream texts', async () => {
    await withServer({}, async (s) => {
      const file = await request(s.port, '/logs/?query=/kubelet.log');
      assert.equal(file.status, 200);
      assert.equal(file.body, 'kubelet line 1\nkubelet line 2\n');
      const relative = await request(s.port, '/logs/?query=svc-dir/svc-dir.log');
      assert.equal(relative.body, 'from svc-dir/svc-dir.log\n');
      const bad = await request(s.port, '/logs/?query=k&tailLines=x');
      assert.equal(bad.status, 400);
      assert.equal(bad.body, 'tailLines: Invalid value: "x": strconv.Atoi: parsing "x": invalid syntax\n');
      const withPath = await request(s.port, '/logs/kubelet.log?query=k');
      assert.equal(withPath.status, 406);
      assert.equal(withPath.body, 'path not allowed in query mode\n');
      const invalid = await request(s.port, '/logs/?query=/nope.log');
      assert.equal(invalid.status, 406);
      assert.equal(
        invalid.body,
        `query: Invalid value: []string{"/nope.log"}: stat ${logs}/nope.log: no such file or directory\n`,
      );
      // Plain paths still serve files in query mode, as upstream falls back to its file server.
      assert.equal((await request(s.port, '/logs/kubelet.log')).body, 'kubelet line 1\nkubelet line 2\n');
    });
  });

  test('a service journald does not know is looked for as <name>, <name>.log, <name>/<name>.log', async () => {
    await withServer({ journalctlPath: fakeJournalctl(join(dir, 'unused.pid')) }, async (s) => {
      const r = await request(s.port, '/logs/?query=svc-file&query=svc-dir&query=nothing');
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-type'], 'text/plain;charset=UTF-8');
      assert.equal(r.body, 'from svc-file.log\nfrom svc-dir/svc-dir.log\n\nlog not found for nothing\n');
      const opts = await request(s.port, '/logs/?query=svc-file&tailLines=1');
      assert.equal(
        opts.body,
        '\noptions present and query resolved to log files for [svc-file]\ntry without specifying options\n',
      );
    });
  });

  test('journalctl gets the arguments, TZ=UTC, and is killed when the client leaves', async () => {
    const pidFile = join(dir, 'leave.pid');
    await withServer({ journalctlPath: fakeJournalctl(pidFile) }, async (s) => {
      const first = await new Promise<string>((resolve, reject) => {
        const req = https.get(
          {
            host: '127.0.0.1',
            port: s.port,
            path: '/logs/?query=fake-unit&tailLines=5',
            rejectUnauthorized: false,
          },
          (res) => {
            assert.equal(res.statusCode, 200);
            res.once('data', (c: Buffer) => {
              resolve(c.toString());
              req.destroy();
            });
          },
        );
        req.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
        req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
      });
      assert.match(
        first,
        /args: --utc --no-pager --output=short-precise --pager-end --lines=5 --unit=fake-unit/,
      );
      await waitFor('the fake journalctl wrote its pid', () => existsSync(pidFile));
      const pid = Number(readFileSync(pidFile, 'utf8'));
      await waitFor(`journalctl (pid ${pid}) killed after the client left`, () => !alive(pid));
    });
  });

  test('a client that leaves without reading ends the query: the handler does not wait on the paused output', async () => {
    const flood = join(dir, 'flood-journalctl');
    writeFileSync(
      flood,
      '#!/bin/sh\nif [ "$1" = "--field" ]; then echo fake-unit.service; exit 0; fi\nexec yes journal-line\n',
    );
    chmodSync(flood, 0o755);
    await withServer({ journalctlPath: flood }, async (s) => {
      await new Promise<void>((resolve, reject) => {
        const req = https.get(
          { host: '127.0.0.1', port: s.port, path: '/logs/?query=fake-unit', rejectUnauthorized: false },
          (res) => {
            res.pause();
            // Long enough for journalctl's output to fill every buffer on the way.
            setTimeout(() => {
              req.destroy();
              resolve();
            }, 500);
          },
        );
        req.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
        req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
      });
      let metrics = '';
      const logsInflight = /kubelet_http_inflight_requests\{[^}]*path="logs"[^}]*\} (\d+)/;
      const inflight = async (): Promise<string | undefined> => {
        metrics = (await request(s.port, '/metrics')).body;
        return logsInflight.exec(metrics)?.[1];
      };
      const until = Date.now() + 5000;
      while ((await inflight()) !== '0') {
        if (Date.now() > until) assert.fail(`the /logs/ query still in flight 5 s after its client left`);
        await new Promise((r) => setTimeout(r, 50));
      }
    });
  });

  test('journalctl is killed at the deadline and the answer ends there', async () => {
    const pidFile = join(dir, 'deadline.pid');
    await withServer({ journalctlPath: fakeJournalctl(pidFile), timeoutMs: 500 }, async (s) => {
      const started = Date.now();
      const r = await rawRequest(s.port, '/logs/?query=fake-unit', { 'Accept-Encoding': 'gzip' });
      assert.ok(Date.now() - started < 5000, 'the answer ended at the deadline');
      assert.equal(r.headers['content-encoding'], 'gzip');
      const text = gunzipSync(r.body).toString();
      assert.match(text, /TZ=UTC/);
      const pid = Number(readFileSync(pidFile, 'utf8'));
      await waitFor(`journalctl (pid ${pid}) killed at the deadline`, () => !alive(pid));
    });
  });

  test('without journalctl no unit is known: the service is looked for as a file', async () => {
    await withServer({ journalctlPath: join(dir, 'no-such-journalctl') }, async (s) => {
      const r = await request(s.port, '/logs/?query=svc-file');
      assert.equal(r.body, 'from svc-file.log\n');
    });
  });
});

/** The units journald has entries for on this machine, through the real journalctl. */
function journalUnits(): string[] {
  try {
    return execFileSync('journalctl', ['--field', '_SYSTEMD_UNIT'], { encoding: 'utf8', timeout: 10_000 })
      .split('\n')
      .filter((l) => l.endsWith('.service'));
  } catch {
    return [];
  }
}

describe('with the real journalctl', () => {
  test('a service journald does not know falls back to the log folder', async () => {
    await withServer({}, async (s) => {
      const r = await request(s.port, '/logs/?query=svc-file');
      assert.equal(r.status, 200);
      assert.equal(r.body, 'from svc-file.log\n');
    });
  });

  const units = journalUnits();
  test(
    "a unit's journal entries are served",
    {
      skip:
        units.length === 0
          ? 'machine: journald has no entries here (`journalctl --field _SYSTEMD_UNIT` lists no unit)'
          : false,
    },
    async () => {
      const unit = units[0]!.replace(/\.service$/, '');
      await withServer({}, async (s) => {
        const r = await request(s.port, `/logs/?query=${encodeURIComponent(unit)}&tailLines=3`);
        assert.equal(r.status, 200);
        assert.ok(r.body.trim().split('\n').length <= 4, r.body);
        assert.ok(r.body.length > 0);
      });
    },
  );
});
