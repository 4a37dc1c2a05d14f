/**
 * How many cases each fuzz property runs: FUZZ_RUNS from the environment (`npm run fuzz` sets 10000),
 * else a few hundred, so the short form stays quick in CI.
 */
export function fuzzRuns(defaultRuns = 300): number {
  const fromEnv = Number(process.env.FUZZ_RUNS);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : defaultRuns;
}
