/**
 * Reads the JUnit report ginkgo writes for an e2e run and says what matters: how many specs passed
 * and failed, and each failure's name with the first line of its message. With two reports (the node
 * under test and a peer kubelet on the same control plane) it lists the specs that fail on one side
 * only, which is where the two kubelets behave differently.
 *
 * Usage:
 *   node --import tsx scripts/conformance/junit-summary.ts summary LABEL REPORT.xml
 *   node --import tsx scripts/conformance/junit-summary.ts diff LABEL_A A.xml LABEL_B B.xml
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export type SpecState = 'passed' | 'failed' | 'skipped' | 'pending';

export interface SpecResult {
  /** The spec's full text, without ginkgo's `[It] ` prefix. */
  name: string;
  state: SpecState;
  /** The first non-empty line of the failure message (failed specs only). */
  firstLine?: string;
  /** One of ginkgo's own suite nodes (`[SynchronizedBeforeSuite]`, …), not a spec. */
  suiteNode?: true;
}

const SUITE_NODE = /^\[(?:Synchronized)?(?:Report)?(?:Before|After)Suite\]|^\[DeferCleanup \(Suite\)\]/;

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function unescapeXml(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, ref: string) => {
    if (ref.startsWith('#x')) return String.fromCodePoint(parseInt(ref.slice(2), 16));
    if (ref.startsWith('#')) return String.fromCodePoint(parseInt(ref.slice(1), 10));
    return ENTITIES[ref] ?? whole;
  });
}

function attribute(attrs: string, name: string): string | undefined {
  const m = new RegExp(`(?:^|\\s)${name}="([^"]*)"`).exec(attrs);
  return m ? unescapeXml(m[1] ?? '') : undefined;
}

function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l !== '') ?? ''
  );
}

/**
 * The specs of a ginkgo v2 JUnit report. Ginkgo's own suite nodes (`[SynchronizedBeforeSuite]`,
 * `[ReportAfterSuite]`, …) are kept: a failed set-up fails every spec and must show.
 */
export function parseJUnit(xml: string): SpecResult[] {
  const out: SpecResult[] = [];
  const testcase = /<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const m of xml.matchAll(testcase)) {
    const attrs = m[1] ?? '';
    const body = m[2] ?? '';
    const name = (attribute(attrs, 'name') ?? '').replace(/^\[It\] /, '');
    const failure = /<(failure|error)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/.exec(body);
    let state: SpecState;
    const status = attribute(attrs, 'status');
    if (
      failure ||
      status === 'failed' ||
      status === 'panicked' ||
      status === 'timedout' ||
      status === 'interrupted'
    )
      state = 'failed';
    else if (status === 'pending') state = 'pending';
    else if (status === 'skipped' || /<skipped\b/.test(body)) state = 'skipped';
    else state = 'passed';
    const result: SpecResult = { name, state };
    if (SUITE_NODE.test(name)) result.suiteNode = true;
    if (state === 'failed') {
      const message = attribute(failure?.[2] ?? '', 'message') ?? unescapeXml(failure?.[3] ?? '');
      result.firstLine = firstLine(message) || `(${status ?? 'failed'}, no message)`;
    }
    out.push(result);
  }
  return out;
}

function count(results: SpecResult[], state: SpecState): number {
  return results.filter((r) => r.state === state && !r.suiteNode).length;
}

/** Counts specs only; a failed suite node is listed with the failed specs, since it fails them all. */
export function formatSummary(label: string, results: SpecResult[]): string {
  const failed = results.filter((r) => r.state === 'failed');
  const ran = count(results, 'passed') + count(results, 'failed');
  const lines = [
    `${label}: ${count(results, 'passed')} passed, ${count(results, 'failed')} failed of ${ran} specs run` +
      ` (${count(results, 'skipped')} skipped)`,
  ];
  for (const f of failed) lines.push(`  FAIL ${f.name}`, `       ${f.firstLine ?? ''}`);
  return `${lines.join('\n')}\n`;
}

export interface OneSidedFailure {
  name: string;
  firstLine: string;
}

/** The specs that ran on both sides and failed on exactly one, by side. */
export function oneSidedFailures(
  a: SpecResult[],
  b: SpecResult[],
): { onlyA: OneSidedFailure[]; onlyB: OneSidedFailure[] } {
  const byName = (rs: SpecResult[]): Map<string, SpecResult> => new Map(rs.map((r) => [r.name, r]));
  const mapA = byName(a);
  const mapB = byName(b);
  const only = (mine: Map<string, SpecResult>, theirs: Map<string, SpecResult>): OneSidedFailure[] =>
    [...mine.values()]
      .filter((r) => r.state === 'failed' && theirs.get(r.name)?.state === 'passed')
      .map((r) => ({ name: r.name, firstLine: r.firstLine ?? '' }));
  return { onlyA: only(mapA, mapB), onlyB: only(mapB, mapA) };
}

export function formatDiff(labelA: string, a: SpecResult[], labelB: string, b: SpecResult[]): string {
  const { onlyA, onlyB } = oneSidedFailures(a, b);
  const section = (title: string, list: OneSidedFailure[]): string[] => [
    `${title}: ${list.length}`,
    ...list.flatMap((f) => [`  FAIL ${f.name}`, `       ${f.firstLine}`]),
  ];
  return `${[
    ...section(`fail on ${labelA}, pass on ${labelB}`, onlyA),
    ...section(`fail on ${labelB}, pass on ${labelA}`, onlyB),
  ].join('\n')}\n`;
}

async function main(argv: string[]): Promise<void> {
  const [verb, ...rest] = argv;
  if (verb === 'summary' && rest.length === 2) {
    const [label, file] = rest as [string, string];
    const results = parseJUnit(await readFile(file, 'utf8'));
    // ginkgo writes an empty report when the suite's own could not be written (a bad path).
    if (results.length === 0) throw new Error(`${file} holds no spec: see ginkgo's output beside it`);
    process.stdout.write(formatSummary(label, results));
    return;
  }
  if (verb === 'diff' && rest.length === 4) {
    const [labelA, fileA, labelB, fileB] = rest as [string, string, string, string];
    const [a, b] = await Promise.all([readFile(fileA, 'utf8'), readFile(fileB, 'utf8')]);
    process.stdout.write(formatDiff(labelA, parseJUnit(a), labelB, parseJUnit(b)));
    return;
  }
  throw new Error('usage: junit-summary.ts summary LABEL REPORT.xml | diff LABEL_A A.xml LABEL_B B.xml');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(`junit-summary: ${(err as Error).message}`);
    process.exit(1);
  });
}
