/**
 * Go's regexp/syntax.Parse(expr, syntax.Perl), as far as its verdict goes: undefined when Go accepts
 * the expression, else Go's error text (`error parsing regexp: <code>: \`<expr>\``). Upstream's kubelet
 * validates a node log query's pattern this way before journalctl sees it; the checks below are the
 * errors Go reports, found the way its parser finds them (first error from the left wins).
 */

const PERL_FLAGS = new Set(['i', 'm', 's', 'U']);
/** Escapes Go knows after a backslash (letters and digits); any other punctuation escapes itself. */
const KNOWN_ESCAPES = new Set([...'afnrtvdDsSwWbBAzpPQEx0']);
const MAX_REPEAT = 1000;

function fail(code: string, expr: string): string {
  return `error parsing regexp: ${code}: \`${expr}\``;
}

/** Length of a repeat `{n}`, `{n,}`, `{n,m}` at i, or 0 when the brace is a literal; -1 when too big. */
function repeatAt(re: string, i: number): { length: number; bad: boolean } {
  const m = /^\{(\d+)(,(\d*))?\}/.exec(re.slice(i));
  if (!m) return { length: 0, bad: false };
  const min = Number(m[1]);
  const max = m[2] === undefined ? min : m[3] === '' ? -1 : Number(m[3]);
  const bad = min > MAX_REPEAT || max > MAX_REPEAT || (max >= 0 && min > max);
  return { length: m[0].length, bad };
}

/** The index after an escape starting at i (re[i] === '\\'), or an error. */
function escapeEnd(re: string, i: number): number | string {
  const c = re[i + 1];
  if (c === undefined) return fail('trailing backslash at end of expression', '');
  if (/[1-7]/.test(c)) {
    // A lone non-zero digit is a backreference, which Go does not support; more digits are octal.
    if (!/[0-7]/.test(re[i + 2] ?? '')) return fail('invalid escape sequence', re.slice(i, i + 2));
    return i + 3;
  }
  if (/[0-9A-Za-z]/.test(c) && !KNOWN_ESCAPES.has(c))
    return fail('invalid escape sequence', re.slice(i, i + 2));
  if ((c === 'p' || c === 'P') && re[i + 2] === '{') {
    const close = re.indexOf('}', i + 2);
    if (close < 0) return fail('invalid character class range', re.slice(i));
    return close + 1;
  }
  if (c === 'x' && re[i + 2] === '{') {
    const close = re.indexOf('}', i + 2);
    if (close < 0) return fail('invalid escape sequence', re.slice(i));
    return close + 1;
  }
  return i + 2;
}

/** The index after a character class starting at i (re[i] === '['), or an error. */
function classEnd(re: string, i: number): number | string {
  let j = i + 1;
  if (re[j] === '^') j++;
  let first = true;
  let prev: string | undefined;
  while (j < re.length) {
    const c = re[j]!;
    if (c === ']' && !first) return j + 1;
    first = false;
    if (c === '[' && re[j + 1] === ':') {
      const close = re.indexOf(':]', j + 2);
      if (close >= 0) {
        j = close + 2;
        prev = undefined;
        continue;
      }
    }
    if (c === '\\') {
      const end = escapeEnd(re, j);
      if (typeof end === 'string') return end;
      prev = end === j + 2 ? re[j + 1] : undefined;
      j = end;
      continue;
    }
    if (c === '-' && prev !== undefined && re[j + 1] !== undefined && re[j + 1] !== ']') {
      const hi = re[j + 1]!;
      if (hi !== '\\' && hi < prev) return fail('invalid character class range', `${prev}-${hi}`);
      j += 2;
      prev = undefined;
      continue;
    }
    prev = c;
    j++;
  }
  return fail('missing closing ]', re.slice(i));
}

/** The index after a group's opening at i (re[i] === '('), or an error for Perl syntax Go lacks. */
function groupOpenEnd(re: string, i: number): number | string {
  if (re[i + 1] !== '?') return i + 1;
  const rest = re.slice(i);
  const named = /^\(\?P?<[A-Za-z0-9_]+>/.exec(rest);
  if (named) return i + named[0].length;
  let j = i + 2;
  while (j < re.length) {
    const c = re[j]!;
    if (c === ':' || c === ')') return j + 1;
    if (!PERL_FLAGS.has(c) && c !== '-')
      return fail('invalid or unsupported Perl syntax', re.slice(i, j + 1));
    j++;
  }
  return fail('missing closing )', re);
}

export function goRegexpSyntaxError(re: string): string | undefined {
  const opens: number[] = [];
  // Whether the last thing read can take a repetition operator, and where the last operator began.
  let atom = false;
  let lastRepeat = -1;
  let i = 0;
  while (i < re.length) {
    const c = re[i]!;
    let next: number | string;
    let repeat = 0;
    if (c === '\\') next = escapeEnd(re, i);
    else if (c === '[') next = classEnd(re, i);
    else if (c === '(') {
      next = groupOpenEnd(re, i);
      // `(?i)` sets flags and is no group.
      if (typeof next === 'number' && re[next - 1] !== ')') opens.push(i);
    } else if (c === ')') {
      if (opens.pop() === undefined) return fail('unexpected )', re);
      next = i + 1;
    } else if (c === '*' || c === '+' || c === '?') repeat = 1;
    else if (c === '{') {
      const r = repeatAt(re, i);
      if (r.bad) return fail('invalid repeat count', re.slice(i, i + r.length));
      repeat = r.length;
    }
    if (repeat > 0) {
      let end = i + repeat;
      if (re[end] === '?') end++;
      if (lastRepeat >= 0) return fail('invalid nested repetition operator', re.slice(lastRepeat, end));
      if (!atom) return fail('missing argument to repetition operator', re.slice(i, end));
      lastRepeat = i;
      i = end;
      continue;
    }
    next ??= i + 1;
    if (typeof next === 'string') return next;
    // After `|` or an opening (flags included) there is nothing to repeat; `^*` is fine in Go.
    atom = c !== '|' && c !== '(';
    lastRepeat = -1;
    i = next;
  }
  if (opens.length > 0) return fail('missing closing )', re);
  return undefined;
}
