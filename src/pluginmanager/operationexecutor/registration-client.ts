/**
 * The kubelet's side of a plugin's registration socket (`pluginregistration.Registration`), over the
 * generated client (../generated): GetInfo and NotifyRegistrationStatus, each under a deadline.
 */
import * as grpc from '@grpc/grpc-js';
import {
  InfoRequest,
  RegistrationClient as GeneratedRegistrationClient,
  RegistrationStatus,
  type PluginInfo,
} from '../generated/pluginregistration/v1/api.js';

/** upstream: dialTimeoutDuration. */
export const DIAL_TIMEOUT_MS = 10_000;
/** upstream: the GetInfo context's 1 s. */
export const GET_INFO_TIMEOUT_MS = 1_000;
/** upstream: notifyTimeoutDuration. */
export const NOTIFY_TIMEOUT_MS = 5_000;

export interface RegistrationClient {
  getInfo(): Promise<PluginInfo>;
  notifyRegistrationStatus(registered: boolean, error: string): Promise<void>;
  close(): void;
}

function deadline(ms: number): Date {
  return new Date(Date.now() + ms);
}

/** Dials the socket and waits, bounded, until the channel is ready (upstream: grpc.WithBlock). */
export async function dialRegistration(
  socketPath: string,
  timeoutMs = DIAL_TIMEOUT_MS,
): Promise<RegistrationClient> {
  const client = new GeneratedRegistrationClient(`unix:${socketPath}`, grpc.credentials.createInsecure());
  try {
    await new Promise<void>((resolve, reject) =>
      client.waitForReady(deadline(timeoutMs), (err) => (err ? reject(err) : resolve())),
    );
  } catch (err) {
    client.close();
    throw new Error(`failed to dial socket ${socketPath}, err: ${(err as Error).message}`);
  }
  return {
    getInfo: () =>
      new Promise((resolve, reject) =>
        client.getInfo(
          InfoRequest.create(),
          new grpc.Metadata(),
          { deadline: deadline(GET_INFO_TIMEOUT_MS) },
          (err, res) => (err ? reject(err) : resolve(res)),
        ),
      ),
    notifyRegistrationStatus: (registered, error) =>
      new Promise((resolve, reject) =>
        client.notifyRegistrationStatus(
          RegistrationStatus.create({ pluginRegistered: registered, error }),
          new grpc.Metadata(),
          { deadline: deadline(NOTIFY_TIMEOUT_MS) },
          (err) => (err ? reject(err) : resolve()),
        ),
      ),
    close: () => client.close(),
  };
}
