/**
 * A pod resources API client as a monitoring agent dials it: grpc-js on the kubelet's
 * `pod-resources/kubelet.sock`. Test equipment, not product.
 */
import type { Client } from '@grpc/grpc-js';
import * as v1 from '../../src/podresources/generated/podresources/v1/podresources.js';
import { grpcUnaryCall, unixSocketClient, type MessageCodec } from './grpc-unary-call.js';

export class PodResourcesClient {
  private readonly client: Client;

  constructor(socketPath: string) {
    this.client = unixSocketClient(socketPath);
  }

  private call<Request, Response>(
    method: string,
    codecs: { request: MessageCodec<Request>; response: MessageCodec<Response> },
    request: Request,
  ): Promise<Response> {
    return grpcUnaryCall(this.client, `/v1.PodResourcesLister/${method}`, codecs, request);
  }

  list(): Promise<v1.ListPodResourcesResponse> {
    const codecs = { request: v1.ListPodResourcesRequest, response: v1.ListPodResourcesResponse };
    return this.call('List', codecs, {});
  }

  getAllocatableResources(): Promise<v1.AllocatableResourcesResponse> {
    const codecs = { request: v1.AllocatableResourcesRequest, response: v1.AllocatableResourcesResponse };
    return this.call('GetAllocatableResources', codecs, {});
  }

  get(podNamespace: string, podName: string): Promise<v1.GetPodResourcesResponse> {
    const codecs = { request: v1.GetPodResourcesRequest, response: v1.GetPodResourcesResponse };
    return this.call('Get', codecs, { podNamespace, podName });
  }

  close(): void {
    this.client.close();
  }
}
