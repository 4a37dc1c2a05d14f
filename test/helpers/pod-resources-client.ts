/**
 * A pod resources API client as a monitoring agent dials it: grpc-js on the kubelet's
 * `pod-resources/kubelet.sock`. Test equipment, not product.
 */
import * as grpc from '@grpc/grpc-js';
import { grpcJsUnary, grpcMethods, type GrpcMethod } from '../../src/lib/grpc-definitions.js';
import * as v1 from '../../src/podresources/generated/podresources/v1/podresources.js';
import { unixSocketClient } from './grpc-unary-call.js';

const LISTER = grpcMethods(v1.PodResourcesListerDefinition);

export class PodResourcesClient {
  private readonly client: grpc.Client;

  constructor(socketPath: string) {
    this.client = unixSocketClient(socketPath);
  }

  private call<Request, Response>(
    method: GrpcMethod<Request, Response>,
    request: Request,
  ): Promise<Response> {
    return grpcJsUnary(this.client, method, request, new grpc.Metadata(), { deadline: Date.now() + 15_000 });
  }

  list(): Promise<v1.ListPodResourcesResponse> {
    return this.call(LISTER.list, {});
  }

  getAllocatableResources(): Promise<v1.AllocatableResourcesResponse> {
    return this.call(LISTER.getAllocatableResources, {});
  }

  get(podNamespace: string, podName: string): Promise<v1.GetPodResourcesResponse> {
    return this.call(LISTER.get, { podNamespace, podName });
  }

  close(): void {
    this.client.close();
  }
}
