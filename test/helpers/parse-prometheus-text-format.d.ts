// Types for the untyped parse-prometheus-text-format package, as far as the tests read it.
declare module 'parse-prometheus-text-format' {
  export interface ParsedSample {
    value: string;
    labels?: Record<string, string>;
    timestamp_ms?: string;
  }
  export interface ParsedFamily {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
    metrics: ParsedSample[];
  }
  export default function parsePrometheusTextFormat(text: string): ParsedFamily[];
}
