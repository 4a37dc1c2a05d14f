/**
 * Label and field selectors with the syntax of apimachinery's labels.Parse and fields.ParseSelector.
 * A parse error is a 400, as from the real server.
 */
import { badRequest } from './api-error.js';

type LabelOp = 'exists' | '!exists' | '=' | '!=' | 'in' | 'notin' | 'gt' | 'lt';

interface LabelRequirement {
  key: string;
  op: LabelOp;
  values: string[];
}

export interface LabelSelector {
  readonly requirements: readonly LabelRequirement[];
  matches(labels: Record<string, string> | undefined): boolean;
}

const KEY_RE = /^([a-z0-9A-Z]([-a-z0-9A-Z.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;

/** Splits on commas that are not inside parentheses: the set of an `in (a,b)` keeps its commas. */
function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(s.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(s.slice(start));
  return parts;
}

function parseRequirement(raw: string): LabelRequirement {
  const term = raw.trim();
  const fail = (why: string) => badRequest(`unable to parse requirement: ${why}`);
  let m = /^!\s*(\S+)$/.exec(term);
  if (m) return checked({ key: m[1]!, op: '!exists', values: [] });
  m = /^(\S+?)\s+(in|notin)\s*\((.*)\)$/.exec(term);
  if (m) {
    const values = m[3]!
      .split(',')
      .map((v) => v.trim())
      .filter((v) => v !== '');
    return checked({ key: m[1]!, op: m[2] as 'in' | 'notin', values });
  }
  m = /^([^=!<>\s]+)\s*(==|=|!=|>|<)\s*(\S*)$/.exec(term);
  if (m) {
    const op = m[2] === '==' || m[2] === '=' ? '=' : m[2] === '!=' ? '!=' : m[2] === '>' ? 'gt' : 'lt';
    if ((op === 'gt' || op === 'lt') && !/^-?\d+$/.test(m[3]!)) {
      throw fail(`for 'Gt', 'Lt' operators, the value must be an integer`);
    }
    return checked({ key: m[1]!, op, values: [m[3]!] });
  }
  if (/^\S+$/.test(term)) return checked({ key: term, op: 'exists', values: [] });
  throw fail(`found '${term}', expected: key, !key, key=value, key!=value, key in (...), key notin (...)`);

  function checked(r: LabelRequirement): LabelRequirement {
    if (!KEY_RE.test(r.key)) throw fail(`invalid label key "${r.key}"`);
    return r;
  }
}

function requirementMatches(r: LabelRequirement, labels: Record<string, string>): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, r.key);
  const v = labels[r.key];
  switch (r.op) {
    case 'exists':
      return has;
    case '!exists':
      return !has;
    case '=':
      return has && v === r.values[0];
    case '!=':
      return !has || v !== r.values[0];
    case 'in':
      return has && r.values.includes(v!);
    case 'notin':
      return !has || !r.values.includes(v!);
    case 'gt':
    case 'lt': {
      if (!has || !/^-?\d+$/.test(v!)) return false;
      const n = Number(v);
      const bound = Number(r.values[0]);
      return r.op === 'gt' ? n > bound : n < bound;
    }
  }
}

export function parseLabelSelector(s: string | null | undefined): LabelSelector {
  const text = (s ?? '').trim();
  const requirements = text === '' ? [] : splitTopLevel(text).map(parseRequirement);
  return {
    requirements,
    matches: (labels) => requirements.every((r) => requirementMatches(r, labels ?? {})),
  };
}

interface FieldRequirement {
  field: string;
  op: '=' | '!=';
  value: string;
}

export interface FieldSelector {
  readonly requirements: readonly FieldRequirement[];
  /** fields maps each supported field to its value in the object, as the resource's GetAttrs does. */
  matches(fields: Record<string, string>): boolean;
  /** The value the selector pins field to, if it does: used to narrow a watch as upstream does. */
  exact(field: string): string | undefined;
}

/** fields.ParseSelector: terms split on unescaped commas; a backslash escapes `\`, `,` and `=`. */
export function parseFieldSelector(s: string | null | undefined): FieldSelector {
  const text = s ?? '';
  const requirements: FieldRequirement[] = [];
  if (text.trim() !== '') {
    const terms: string[] = [];
    let cur = '';
    for (let i = 0; i < text.length; i++) {
      const c = text[i]!;
      if (c === '\\' && i + 1 < text.length) {
        cur += c + text[++i];
      } else if (c === ',') {
        terms.push(cur);
        cur = '';
      } else cur += c;
    }
    terms.push(cur);
    for (const term of terms) {
      const m = /^(.*?)(!=|==|=)(.*)$/s.exec(term);
      if (!m || m[1]!.trim() === '')
        throw badRequest(`invalid selector: '${text}'; can't understand '${term}'`);
      requirements.push({
        field: m[1]!.trim(),
        op: m[2] === '!=' ? '!=' : '=',
        value: m[3]!.replace(/\\(.)/g, '$1'),
      });
    }
  }
  return {
    requirements,
    matches: (fields) =>
      requirements.every((r) => {
        const v = fields[r.field] ?? '';
        return r.op === '=' ? v === r.value : v !== r.value;
      }),
    exact: (field) => requirements.find((r) => r.field === field && r.op === '=')?.value,
  };
}
