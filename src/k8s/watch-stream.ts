/**
 * The events of one watch response, newline-delimited JSON read as it arrives, whichever HTTP version
 * carries it: the transport feeds text and says when the body ended or failed; a subclass says how to
 * cut the response from this side.
 */
import { errorMessage } from '../lib/errors.js';
import { DeadlineExceededError, type Deadline } from '../lib/deadline.js';
import { KubeApiError } from './api-status.js';
import type { WatchEvent, WatchStream } from './rest-client.js';

export abstract class LineWatchStream<T> implements WatchStream<T> {
  private readonly queue: WatchEvent<T>[] = [];
  private buffer = '';
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly deadline: Deadline,
    private readonly what: string,
  ) {}

  /** Ends the response itself (the socket or the stream); called once the watch ended on this side. */
  protected abstract cut(): void;

  /** Listens to the deadline: called by the subclass once its own listeners are in place. */
  protected watchDeadline(): void {
    const signal = this.deadline.signal;
    const onAbort = () => {
      // Our own deadline passing is the watch's end, as the server's timeout would have been.
      const reason: unknown = signal.reason;
      this.finish(
        reason instanceof DeadlineExceededError ? undefined : new Error('watch aborted', { cause: reason }),
      );
      this.cut();
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  }

  protected onText(chunk: string): void {
    // One pass over what has come: each line is cut out once and the rest kept once, not re-sliced per line.
    const text = this.buffer === '' ? chunk : this.buffer + chunk;
    let start = 0;
    let nl: number;
    while ((nl = text.indexOf('\n', start)) >= 0) {
      const line = text.slice(start, nl);
      start = nl + 1;
      if (line.trim() === '') continue;
      try {
        this.queue.push(JSON.parse(line) as WatchEvent<T>);
      } catch (err) {
        this.finish(new Error(`undecodable watch event: ${errorMessage(err)}`));
        this.cut();
        return;
      }
    }
    this.buffer = start === 0 ? text : text.slice(start);
    this.wake?.();
  }

  protected finish(err?: Error): void {
    if (this.ended) return;
    this.ended = true;
    if (err) this.failure = err;
    this.deadline.dispose();
    this.wake?.();
  }

  close(): void {
    this.finish();
    this.cut();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<WatchEvent<T>> {
    try {
      for (;;) {
        const event = this.queue.shift();
        if (event) {
          yield event;
          continue;
        }
        if (this.ended) {
          if (this.failure) {
            throw new KubeApiError(`${this.what}: ${this.failure.message}`, {
              httpStatus: 0,
              reason: 'Transport',
              cause: this.failure,
            });
          }
          return;
        }
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
      }
    } finally {
      this.close();
    }
  }
}
