/**
 * The syntax checks of k8s.io/apimachinery/pkg/util/validation: each returns the problems with a
 * value in upstream's words (empty when it is valid), so messages read as the API server's.
 */
import { isIP } from 'node:net';

const DNS1123_LABEL_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME_PART_RE = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE_RE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const IANA_SVC_NAME_RE = /^[-a-z0-9]+$/;
const ENV_VAR_NAME_RE = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const CONFIG_MAP_KEY_RE = /^[-._a-zA-Z0-9]+$/;
const HTTP_HEADER_NAME_RE = /^[-A-Za-z0-9]+$/;
// A sysctl name, with '.' or '/' between its parts (upstream IsValidSysctlName).
const SYSCTL_RE = /^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$/;

export const DNS1123_LABEL_MAX_LENGTH = 63;
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;

const DNS1123_LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

function maxLen(n: number): string {
  return `must be no more than ${n} characters`;
}

export function dns1123LabelProblems(v: string): string[] {
  const out: string[] = [];
  if (v.length > DNS1123_LABEL_MAX_LENGTH) out.push(maxLen(DNS1123_LABEL_MAX_LENGTH));
  if (!DNS1123_LABEL_RE.test(v)) out.push(DNS1123_LABEL_MSG);
  return out;
}

export function dns1123SubdomainProblems(v: string): string[] {
  const out: string[] = [];
  if (v.length > DNS1123_SUBDOMAIN_MAX_LENGTH) out.push(maxLen(DNS1123_SUBDOMAIN_MAX_LENGTH));
  if (!DNS1123_SUBDOMAIN_RE.test(v)) out.push(DNS1123_SUBDOMAIN_MSG);
  return out;
}

export function isDNS1123Label(v: string): boolean {
  return dns1123LabelProblems(v).length === 0;
}

export function isDNS1123Subdomain(v: string): boolean {
  return dns1123SubdomainProblems(v).length === 0;
}

/** A label or annotation key: an optional DNS subdomain prefix and a name of 63 characters at most. */
export function qualifiedNameProblems(key: string): string[] {
  const parts = key.split('/');
  let name: string;
  const out: string[] = [];
  if (parts.length === 1) name = parts[0]!;
  else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) out.push('prefix part must be non-empty');
    else out.push(...dns1123SubdomainProblems(prefix).map((m) => `prefix part ${m}`));
  } else {
    return [
      "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character with an optional DNS subdomain prefix and '/'",
    ];
  }
  if (name.length === 0) out.push('name part must be non-empty');
  else if (name.length > 63) out.push(`name part ${maxLen(63)}`);
  if (name.length > 0 && !QUALIFIED_NAME_PART_RE.test(name)) {
    out.push(
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    );
  }
  return out;
}

export function labelValueProblems(v: string): string[] {
  const out: string[] = [];
  if (v.length > 63) out.push(maxLen(63));
  if (!LABEL_VALUE_RE.test(v)) {
    out.push(
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    );
  }
  return out;
}

/** A port name: at most 15 characters, lower-case letters, digits and '-', at least one letter. */
export function ianaSvcNameProblems(v: string): string[] {
  const out: string[] = [];
  if (v.length > 15) out.push(maxLen(15));
  if (!IANA_SVC_NAME_RE.test(v))
    out.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  if (v.includes('--')) out.push('must not contain consecutive hyphens');
  if (!/[a-z]/.test(v)) out.push('must contain at least one letter (a-z)');
  if (v.startsWith('-') || v.endsWith('-')) out.push('must not begin or end with a hyphen');
  return out;
}

export function envVarNameProblems(v: string): string[] {
  return ENV_VAR_NAME_RE.test(v)
    ? []
    : [
        "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit",
      ];
}

export function configMapKeyProblems(v: string): string[] {
  const out: string[] = [];
  if (v.length > DNS1123_SUBDOMAIN_MAX_LENGTH) out.push(maxLen(DNS1123_SUBDOMAIN_MAX_LENGTH));
  if (!CONFIG_MAP_KEY_RE.test(v))
    out.push("a valid config key must consist of alphanumeric characters, '-', '_' or '.'");
  if (v === '.' || v === '..') out.push(`must not be '${v}'`);
  else if (v.startsWith('..')) out.push("must not start with '..'");
  return out;
}

export function httpHeaderNameProblems(v: string): string[] {
  return HTTP_HEADER_NAME_RE.test(v)
    ? []
    : ["a valid HTTP header must consist of alphanumeric characters or '-'"];
}

export function sysctlNameProblems(v: string): string[] {
  if (v.length > 253 || !SYSCTL_RE.test(v)) {
    return [`must have at most 253 characters and match regex ${SYSCTL_RE.source.slice(1, -1)}`];
  }
  return [];
}

export function ipProblems(v: string): string[] {
  return isIP(v) === 0 ? ['must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'] : [];
}

/** A port number, 1 to 65535. */
export function isValidPortNum(n: number): boolean {
  return Number.isInteger(n) && n >= 1 && n <= 65535;
}
