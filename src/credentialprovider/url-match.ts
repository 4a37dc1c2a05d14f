/**
 * Whether an image matches a registry pattern, as upstream's credentialprovider decides it for both
 * docker config keys and a plugin's `matchImages` (keyring.go URLsMatchStr, ParseSchemelessURL,
 * SplitURL): the host's dot-separated parts match one by one as globs (Go's filepath.Match), the
 * port must be the same, and the pattern's path must be a prefix of the image's.
 *
 * The parsing follows Go's net/url (not WHATWG's URL, which lower-cases, punycodes and accepts
 * what Go refuses), so a `matchImages` entry upstream rejects at start is rejected here too, with
 * Go's words.
 */

import { KubeletError } from '../lib/errors.js';
import { goQuote } from '../lib/go-quote.js';

/** A pattern or image split as Go's url.Parse splits `https://<it>`. */
export interface SchemelessUrl {
  /** As written, port included: `*.registry.io:8080`. */
  host: string;
  /** Unescaped: '' when there is none. */
  path: string;
}

export class UrlParseError extends KubeletError {
  constructor(raw: string, reason: string) {
    super('INVALID_URL', `parse ${goQuote(`https://${raw}`)}: ${reason}`);
    this.name = 'UrlParseError';
  }
}

export class BadPatternError extends KubeletError {
  constructor() {
    super('BAD_PATTERN', 'syntax error in pattern');
    this.name = 'BadPatternError';
  }
}

/** upstream ParseSchemelessURL: url.Parse("https://" + s); throws UrlParseError where Go's parse fails. */
export function parseSchemelessUrl(raw: string): SchemelessUrl {
  // Go works on UTF-8 bytes; latin1 strings keep one character per byte.
  const s = Buffer.from(raw, 'utf8').toString('latin1');
  const fail = (reason: string): never => {
    throw new UrlParseError(raw, reason);
  };
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) fail('net/url: invalid control character in URL');
  }
  const hash = s.indexOf('#');
  const beforeFragment = hash >= 0 ? s.slice(0, hash) : s;
  const query = beforeFragment.indexOf('?');
  const rest = query >= 0 ? beforeFragment.slice(0, query) : beforeFragment;
  const slash = rest.indexOf('/');
  const authority = slash >= 0 ? rest.slice(0, slash) : rest;
  const rawPath = slash >= 0 ? rest.slice(slash) : '';

  const at = authority.lastIndexOf('@');
  if (at >= 0 && !/^[A-Za-z0-9\-._:~!$&'()*+,;=%@]*$/.test(authority.slice(0, at)))
    fail('net/url: invalid userinfo');
  const rawHost = at >= 0 ? authority.slice(at + 1) : authority;
  checkPort(rawHost, fail);
  const host = unescape(rawHost, 'host', fail);
  if (at >= 0) unescape(authority.slice(0, at), 'userinfo', fail);
  const path = unescape(rawPath, 'path', fail);
  if (hash >= 0) unescape(s.slice(hash + 1), 'fragment', fail);
  return {
    host: Buffer.from(host, 'latin1').toString('utf8'),
    path: Buffer.from(path, 'latin1').toString('utf8'),
  };
}

/** Go's parseHost checks on the port: only digits after the last colon (after `]` for IPv6). */
function checkPort(host: string, fail: (reason: string) => never): void {
  let colonPort: string;
  if (host.startsWith('[')) {
    const close = host.lastIndexOf(']');
    if (close < 0) fail("missing ']' in host");
    colonPort = host.slice(close + 1);
  } else {
    const colon = host.lastIndexOf(':');
    if (colon < 0) return;
    colonPort = host.slice(colon);
  }
  if (colonPort !== '' && !/^:\d*$/.test(colonPort)) fail(`invalid port ${goQuote(colonPort)} after host`);
}

// The characters Go's url allows unescaped in a host, besides letters and digits (shouldEscape).
const HOST_CHARS = new Set('!$&\'()*+,;=:[]<>"-_.~');

/** Go's url.unescape: checks %XX escapes (and, in a host, the characters) and decodes them. */
function unescape(
  s: string,
  mode: 'host' | 'path' | 'userinfo' | 'fragment',
  fail: (r: string) => never,
): string {
  let out = '';
  for (let i = 0; i < s.length;) {
    const c = s[i]!;
    if (c === '%') {
      const hex = s.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) fail(`invalid URL escape ${goQuote(s.slice(i, i + 3))}`);
      // A host may escape only non-ASCII bytes (and %25 for an IPv6 zone).
      if (mode === 'host' && parseInt(hex[0]!, 16) < 8 && s.slice(i, i + 3) !== '%25')
        fail(`invalid URL escape ${goQuote(s.slice(i, i + 3))}`);
      out += String.fromCharCode(parseInt(hex, 16));
      i += 3;
      continue;
    }
    if (mode === 'host' && c.charCodeAt(0) < 0x80 && !/[A-Za-z0-9]/.test(c) && !HOST_CHARS.has(c))
      fail(`invalid character ${goQuote(c)} in host name`);
    out += c;
    i++;
  }
  return out;
}

/** net.SplitHostPort where it works; the whole host and no port where it does not (upstream SplitURL). */
export function splitUrl(url: SchemelessUrl): { parts: string[]; port: string } {
  const split = splitHostPort(url.host);
  const host = split ? split.host : url.host;
  return { parts: host.split('.'), port: split ? split.port : '' };
}

function splitHostPort(hostport: string): { host: string; port: string } | undefined {
  const colon = hostport.lastIndexOf(':');
  if (colon < 0) return undefined;
  if (hostport.startsWith('[')) {
    const end = hostport.indexOf(']');
    if (end < 0 || end + 1 !== colon) return undefined;
    const host = hostport.slice(1, end);
    if (/[[\]]/.test(host)) return undefined;
    return { host, port: hostport.slice(colon + 1) };
  }
  const host = hostport.slice(0, colon);
  if (host.includes(':') || /[[\]]/.test(hostport)) return undefined;
  return { host, port: hostport.slice(colon + 1) };
}

/**
 * upstream URLsMatchStr: whether target matches the glob. Throws what Go's url.Parse or
 * filepath.Match would return as an error; callers that only match (the keyring, a plugin's
 * matchImages) treat that as no match.
 */
export function urlsMatchStr(glob: string, target: string): boolean {
  const g = parseSchemelessUrl(glob);
  const t = parseSchemelessUrl(target);
  const gs = splitUrl(g);
  const ts = splitUrl(t);
  if (gs.port !== ts.port) return false;
  if (gs.parts.length !== ts.parts.length) return false;
  if (!t.path.startsWith(g.path)) return false;
  return gs.parts.every((part, i) => filepathMatch(part, ts.parts[i] ?? ''));
}

/** urlsMatchStr with every error a mismatch, as upstream's callers ignore it. */
export function urlsMatch(glob: string, target: string): boolean {
  try {
    return urlsMatchStr(glob, target);
  } catch {
    return false;
  }
}

/**
 * Go's path/filepath.Match on Unix: `*` any run without `/`, `?` one character, `[...]` a class
 * (`^` negates, `a-z` ranges), `\` escapes. Throws BadPatternError for a malformed pattern, as Go
 * returns ErrBadPattern.
 */
export function filepathMatch(pattern: string, name: string): boolean {
  let pat = Array.from(pattern);
  let rest = Array.from(name);
  patterns: while (pat.length > 0) {
    const { star, chunk, after } = scanChunk(pat);
    pat = after;
    if (star && chunk.length === 0) return !rest.includes('/');
    const first = matchChunk(chunk, rest);
    if (first !== undefined && (first.length === 0 || pat.length > 0)) {
      rest = first;
      continue;
    }
    if (star) {
      for (let i = 0; i < rest.length && rest[i] !== '/'; i++) {
        const t = matchChunk(chunk, rest.slice(i + 1));
        if (t !== undefined) {
          if (pat.length === 0 && t.length > 0) continue;
          rest = t;
          continue patterns;
        }
      }
    }
    // The rest of the pattern must still be well-formed, as Go checks before it says no.
    while (pat.length > 0) {
      const next = scanChunk(pat);
      pat = next.after;
      matchChunk(next.chunk, []);
    }
    return false;
  }
  return rest.length === 0;
}

function scanChunk(pattern: string[]): { star: boolean; chunk: string[]; after: string[] } {
  let p = pattern;
  let star = false;
  while (p.length > 0 && p[0] === '*') {
    p = p.slice(1);
    star = true;
  }
  let inRange = false;
  let i = 0;
  scan: for (; i < p.length; i++) {
    switch (p[i]) {
      case '\\':
        if (i + 1 < p.length) i++;
        break;
      case '[':
        inRange = true;
        break;
      case ']':
        inRange = false;
        break;
      case '*':
        if (!inRange) break scan;
        break;
    }
  }
  return { star, chunk: p.slice(0, i), after: p.slice(i) };
}

/** The rest of s after chunk matched its start, or undefined; throws on a malformed chunk. */
function matchChunk(chunkIn: string[], sIn: string[]): string[] | undefined {
  let chunk = chunkIn;
  let s = sIn;
  // Once failed, the chunk is still read to the end, to find a malformed one.
  let failed = false;
  while (chunk.length > 0) {
    if (!failed && s.length === 0) failed = true;
    const c = chunk[0]!;
    if (c === '[') {
      let r = '';
      if (!failed) {
        r = s[0]!;
        s = s.slice(1);
      }
      chunk = chunk.slice(1);
      let negated = false;
      if (chunk[0] === '^') {
        negated = true;
        chunk = chunk.slice(1);
      }
      let match = false;
      let ranges = 0;
      for (;;) {
        if (chunk[0] === ']' && ranges > 0) {
          chunk = chunk.slice(1);
          break;
        }
        const lo = getEsc(chunk);
        chunk = lo.after;
        let hi = lo.r;
        if (chunk[0] === '-') {
          const h = getEsc(chunk.slice(1));
          hi = h.r;
          chunk = h.after;
        }
        if (!failed && codePoint(lo.r) <= codePoint(r) && codePoint(r) <= codePoint(hi)) match = true;
        ranges++;
      }
      if (match === negated) failed = true;
    } else if (c === '?') {
      if (!failed) {
        if (s[0] === '/') failed = true;
        s = s.slice(1);
      }
      chunk = chunk.slice(1);
    } else {
      let literal = c;
      if (c === '\\') {
        chunk = chunk.slice(1);
        if (chunk.length === 0) throw new BadPatternError();
        literal = chunk[0]!;
      }
      if (!failed) {
        if (literal !== s[0]) failed = true;
        s = s.slice(1);
      }
      chunk = chunk.slice(1);
    }
  }
  return failed ? undefined : s;
}

function getEsc(chunkIn: string[]): { r: string; after: string[] } {
  let chunk = chunkIn;
  if (chunk.length === 0 || chunk[0] === '-' || chunk[0] === ']') throw new BadPatternError();
  if (chunk[0] === '\\') {
    chunk = chunk.slice(1);
    if (chunk.length === 0) throw new BadPatternError();
  }
  const r = chunk[0]!;
  const after = chunk.slice(1);
  if (after.length === 0) throw new BadPatternError();
  return { r, after };
}

function codePoint(c: string): number {
  return c.codePointAt(0) ?? 0;
}
