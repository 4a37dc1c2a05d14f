/**
 * The kubelet's one event recorder, set up as upstream's makeEventRecorder (cmd/kubelet/app/server.go)
 * sets up its broadcaster: every event is logged at --v=3, and goes to the API server when there is
 * one. Here every event also goes to the node's store, in both modes, through a correlator of its own.
 */
import type { Clock } from '../lib/clock.js';
import { logger, type Logger } from '../lib/log.js';
import type { ObjectEventRecorder } from './event-recorder.js';
import { fanOutRecorder, StoreEventRecorder, type EventStore } from './event-store.js';

export interface KubeletEventRecorderOptions {
  store: EventStore;
  nodeName: string;
  clock: Clock;
  /** Cluster mode's recorder to the API server (it logs each event itself); none standalone. */
  api?: ObjectEventRecorder;
  log?: Logger;
}

export function makeKubeletEventRecorder(opts: KubeletEventRecorderOptions): ObjectEventRecorder {
  const log = opts.log ?? logger('events');
  const toStore = new StoreEventRecorder({
    store: opts.store,
    nodeName: opts.nodeName,
    clock: opts.clock,
    logEvents: opts.api === undefined,
    log,
  });
  if (!opts.api) {
    log.info('No api server defined - no events will be sent to API server');
    return toStore;
  }
  log.v(4, 'Sending events to api server');
  return fanOutRecorder(opts.api, toStore);
}
