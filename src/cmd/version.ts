/**
 * The version this kubelet reports: the Kubernetes minor it implements, with tskubelet's own
 * release as semver build metadata (as k3s writes `v1.30.2+k3s1`). Build metadata does not take
 * part in version comparisons, so the API server's version-skew rules see a plain v1.30.0 kubelet,
 * while `kubectl get nodes -o wide` and `--version` still show which kubelet runs.
 */

/** The Kubernetes release whose kubelet behaviour, flags and API this implements. */
export const KUBERNETES_VERSION = 'v1.30.0';

/** tskubelet's own release; kept equal to package.json's version (a unit test checks). */
export const TSKUBELET_VERSION = '0.1.0';

/** What the Node reports as status.nodeInfo.kubeletVersion (and kubeProxyVersion, as upstream). */
export const KUBELET_VERSION = `${KUBERNETES_VERSION}+tskubelet.${TSKUBELET_VERSION}`;

/** The line `--version` prints, in upstream's form (`Kubernetes v1.30.0`). */
export function versionText(): string {
  return `Kubernetes ${KUBELET_VERSION}`;
}

/** What `--version=raw` prints: the version fields upstream's version.Info has, as JSON. */
export function rawVersionText(): string {
  const [major, minor] = KUBERNETES_VERSION.slice(1).split('.');
  return JSON.stringify(
    {
      major,
      minor,
      gitVersion: KUBELET_VERSION,
      gitCommit: '',
      gitTreeState: '',
      buildDate: '',
      goVersion: '',
      compiler: 'tsc',
      platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
    },
    null,
    2,
  );
}
