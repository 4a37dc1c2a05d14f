/**
 * The kubelet's side of a plugin's registration socket (`pluginregistration.Registration`), over the
 * generated client (../generated): GetInfo and NotifyRegistrationStatus, each under a deadline.
 */
import { grpcJsUnary, grpcMethods, loadGrpcJs } from '../../lib/grpc-definitions.js';
import {
  InfoRequest,
  RegistrationDefinition,
  RegistrationStatus,
  type PluginInfo,
} from '../generated/pluginregistration/v1/api.js';

const REGISTRATION = grpcMethods(RegistrationDefinition);

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
  const grpcJs = await loadGrpcJs();
  const client = new grpcJs.Client(`unix:${socketPath}`, grpcJs.credentials.createInsecure());
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
      grpcJsUnary(client, REGISTRATION.getInfo, InfoRequest.create(), new grpcJs.Metadata(), {
        deadline: deadline(GET_INFO_TIMEOUT_MS),
      }),
    notifyRegistrationStatus: async (registered, error) => {
      await grpcJsUnary(
        client,
        REGISTRATION.notifyRegistrationStatus,
        RegistrationStatus.create({ pluginRegistered: registered, error }),
        new grpcJs.Metadata(),
        { deadline: deadline(NOTIFY_TIMEOUT_MS) },
      );
    },
    close: () => client.close(),
  };
}
