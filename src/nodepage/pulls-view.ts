/**
 * What the node page reads about image pulls: the ones running now (bytes done of total) and the
 * last few finished (size and time). The image puller's progress tracker (src/images) implements it;
 * the page shows "not reported" without one.
 */
export interface PullsView {
  inFlight(): { image: string; bytesDone: number; bytesTotal: number; startedAt: number }[];
  recent(): { image: string; bytes: number; durationMs: number; at: number }[];
}
