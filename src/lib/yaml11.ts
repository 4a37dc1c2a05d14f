/**
 * YAML as Kubernetes reads it. The upstream kubelet decodes manifests and its config file through
 * sigs.k8s.io/yaml, which is go-yaml v2: YAML 1.1 scalars, so `0644` is octal (420), `yes`/`no`/
 * `on`/`off`/`y`/`n` are booleans and `1_000` is 1000. Two parts of YAML 1.1 that go-yaml v2 does
 * not apply to untyped values are left out: sexagesimal numbers (`1:20` stays a string) and
 * timestamps (`2024-01-02` stays a string, as go-yaml keeps them for interface{} targets).
 */
import {
  parse,
  parseAllDocuments,
  type Document,
  type Tags,
  type DocumentOptions,
  type ParseOptions,
  type SchemaOptions,
  type ToJSOptions,
} from 'yaml';

const LEFT_OUT_TAGS = new Set(['tag:yaml.org,2002:timestamp', 'tag:yaml.org,2002:binary']);

/** Options that give go-yaml v2's reading of plain scalars. */
export const YAML_1_1_OPTIONS: DocumentOptions & SchemaOptions & ParseOptions = {
  version: '1.1',
  customTags: (tags: Tags) =>
    tags.filter((t) => {
      if (typeof t === 'string') return true;
      if (LEFT_OUT_TAGS.has(t.tag)) return false;
      // The sexagesimal int and float forms carry the int and float tags with format TIME.
      return t.format !== 'TIME';
    }),
};

/** Every document of text, read as YAML 1.1 (see the file comment). */
export function parseAllYaml11Documents(
  text: string,
  options: ParseOptions & DocumentOptions = {},
): Document.Parsed[] {
  const docs = parseAllDocuments(text, { ...YAML_1_1_OPTIONS, ...options });
  // parseAllDocuments returns an EmptyStream (an array) for an empty text, else an array of documents.
  return Array.isArray(docs) ? docs : [docs as unknown as Document.Parsed];
}

/** One document read as YAML 1.1 and converted to plain values (see the file comment). */
export function parseYaml11(
  text: string,
  options: ParseOptions & DocumentOptions & ToJSOptions = {},
): unknown {
  return parse(text, { ...YAML_1_1_OPTIONS, ...options }) as unknown;
}
