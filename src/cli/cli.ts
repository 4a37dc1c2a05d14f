/**
 * `tskubelet get pods | describe pod NAME | logs POD | events`: the local kubelet, read as kubectl
 * would show it, for a node without kubectl (standalone). It reads the node page's JSON over the
 * kubelet's root-only socket (find-kubelet.ts; docs/kubelet-api.md, "The node page");
 * `tskubelet node-page-url` prints the page's address with its token for a browser.
 */
import { parseArgs } from 'node:util';
import type { Pod } from '../api/core-v1.js';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { DEFAULT_ROOT_DIR, findKubelet, readNodePageUrl } from './find-kubelet.js';
import { NodeClient } from './node-client.js';
import { describePod, printEvents, printPods } from './printers.js';
import { compareStrings } from '../lib/compare.js';

export const CLI_COMMANDS = ['get', 'describe', 'logs', 'events', 'node-page-url'] as const;

export const CLI_USAGE = `Read the local kubelet as kubectl would show it:
  tskubelet get pods [-n NAMESPACE | -A]
  tskubelet describe pod NAME [-n NAMESPACE]
  tskubelet logs POD [-c CONTAINER] [-f] [--tail N] [-p] [--timestamps] [-n NAMESPACE]
  tskubelet events [-n NAMESPACE | -A]
  tskubelet node-page-url        the node page's address for a browser on this machine (with its token)
As root (or a member of the kubelet's --node-page-group). Options:
  --root-dir DIR   the kubelet's --root-dir (default ${DEFAULT_ROOT_DIR}; without it, the kubelet on
                   127.0.0.1:10248 is asked where its socket is)
  --server URL     unix:PATH of the kubelet's socket, or its /healthz listener (http://HOST:PORT, with
                   the token from DIR/node-page/url); also $TSKUBELET_SERVER
`;

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  now(): number;
  env: Record<string, string | undefined>;
}

const defaultIo: CliIo = {
  stdout: process.stdout,
  stderr: process.stderr,
  now: () => Date.now(),
  env: process.env,
};

class UsageError extends KubeletError {
  constructor(message: string) {
    super('CLI_USAGE', message);
  }
}

/** Runs one command; resolves to the exit code. */
export async function runCli(argv: string[], io: CliIo = defaultIo, signal?: AbortSignal): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        namespace: { type: 'string', short: 'n' },
        'all-namespaces': { type: 'boolean', short: 'A' },
        container: { type: 'string', short: 'c' },
        follow: { type: 'boolean', short: 'f' },
        previous: { type: 'boolean', short: 'p' },
        tail: { type: 'string' },
        timestamps: { type: 'boolean' },
        server: { type: 'string' },
        'root-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    io.stderr.write(`error: ${errorMessage(err)}\n${CLI_USAGE}`);
    return 1;
  }
  if (values.help) {
    io.stdout.write(CLI_USAGE);
    return 0;
  }
  const where = {
    ...(typeof values['root-dir'] === 'string' ? { rootDir: values['root-dir'] } : {}),
    ...(typeof values.server === 'string' || io.env.TSKUBELET_SERVER
      ? { server: (values.server as string | undefined) ?? io.env.TSKUBELET_SERVER! }
      : {}),
  };
  let client: NodeClient | undefined;
  const kubelet = async () => (client ??= new NodeClient(await findKubelet(where)));
  const all = values['all-namespaces'] === true;
  const namespace = (values.namespace as string | undefined) ?? 'default';
  const inNamespace = (ns: string | undefined) => all || (ns ?? '') === namespace;
  try {
    const [command, ...rest] = positionals;
    switch (command) {
      case 'get': {
        if (rest[0] !== 'pods' && rest[0] !== 'pod' && rest[0] !== 'po')
          throw new UsageError(`the server doesn't have a resource type "${rest[0] ?? ''}" (only pods)`);
        const pods = (await (await kubelet()).pods()).items
          .filter((p) => inNamespace(p.metadata.namespace))
          .filter((p) => rest.length < 2 || rest.slice(1).includes(p.metadata.name ?? ''))
          .sort(byNamespaceAndName);
        if (pods.length === 0) {
          io.stderr.write(all ? 'No resources found\n' : `No resources found in ${namespace} namespace.\n`);
          return 0;
        }
        io.stdout.write(printPods(pods, io.now(), all));
        return 0;
      }
      case 'describe': {
        if (rest[0] !== 'pods' && rest[0] !== 'pod' && rest[0] !== 'po')
          throw new UsageError('only pods can be described: tskubelet describe pod NAME');
        const name = rest[1];
        if (!name) throw new UsageError('a pod name is required: tskubelet describe pod NAME');
        const { pod, events } = await (await kubelet()).pod(namespace, name);
        io.stdout.write(describePod(pod, events, io.now()));
        return 0;
      }
      case 'events': {
        const { items } = await (await kubelet()).events(all ? undefined : namespace);
        if (items.length === 0) {
          io.stderr.write(all ? 'No events found.\n' : `No events found in ${namespace} namespace.\n`);
          return 0;
        }
        io.stdout.write(printEvents(items, io.now(), all));
        return 0;
      }
      case 'logs': {
        const podName = rest[0];
        if (!podName) throw new UsageError('a pod name is required: tskubelet logs POD [-c CONTAINER]');
        let container = values.container as string | undefined;
        if (!container) {
          const { pod } = await (await kubelet()).pod(namespace, podName);
          container = defaultContainer(pod, io);
        }
        const query = new URLSearchParams();
        if (values.follow) query.set('follow', 'true');
        if (values.previous) query.set('previous', 'true');
        if (values.timestamps) query.set('timestamps', 'true');
        if (values.tail !== undefined && values.tail !== '-1') query.set('tailLines', values.tail as string);
        await (await kubelet()).logs(namespace, podName, container, query, io.stdout, signal);
        return 0;
      }
      case 'node-page-url':
        io.stdout.write(`${await readNodePageUrl(where)}\n`);
        return 0;
      default:
        throw new UsageError(`unknown command "${command ?? ''}"`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`error: ${err.message}\n${CLI_USAGE}`);
      return 1;
    }
    io.stderr.write(`Error from server: ${errorMessage(err)}\n`);
    return 1;
  }
}

/** kubectl's choice: the default-container annotation, else the first container (said on stderr). */
function defaultContainer(pod: Pod, io: CliIo): string {
  const names = pod.spec.containers.map((c) => c.name);
  const annotated = pod.metadata.annotations?.['kubectl.kubernetes.io/default-container'];
  if (annotated && names.includes(annotated)) return annotated;
  if (names.length > 1) io.stderr.write(`Defaulted container "${names[0]}" out of: ${names.join(', ')}\n`);
  return names[0] ?? '';
}

function byNamespaceAndName(a: Pod, b: Pod): number {
  return (
    compareStrings(a.metadata.namespace ?? '', b.metadata.namespace ?? '') ||
    compareStrings(a.metadata.name ?? '', b.metadata.name ?? '')
  );
}
