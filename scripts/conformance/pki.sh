# shellcheck shell=bash
# Certificates and kubeconfigs for the conformance run's throw-away control plane (sourced by
# scripts/conformance.sh): one CA signs the API server's serving certificate and every client
# certificate; the service account tokens get a key pair of their own. Nothing here outlives the run.

# openssl's own chatter only when it fails.
pki_openssl() {
  local out
  if ! out=$(openssl "$@" 2>&1); then
    echo "$out" >&2
    die "openssl $1 failed"
  fi
}

# A certificate signed by the CA: pki_cert DIR NAME SUBJECT [SUBJECT_ALT_NAMES]
pki_cert() {
  local dir=$1 name=$2 subject=$3 san=${4:-}
  local ext=$dir/$name.ext
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [[ -n $san ]]; then
      echo "extendedKeyUsage=serverAuth"
      echo "subjectAltName=$san"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"$ext"
  pki_openssl req -new -newkey rsa:2048 -nodes -keyout "$dir/$name.key" -subj "$subject" -out "$dir/$name.csr"
  pki_openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 2 -sha256 -extfile "$ext" -out "$dir/$name.crt"
  rm -f "$dir/$name.csr" "$ext"
}

# A kubeconfig for one client certificate: pki_kubeconfig DIR NAME SERVER_URL
pki_kubeconfig() {
  local dir=$1 name=$2 server=$3
  cat >"$dir/$name.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: conformance
  cluster:
    server: $server
    certificate-authority: $dir/ca.crt
users:
- name: $name
  user:
    client-certificate: $dir/$name.crt
    client-key: $dir/$name.key
contexts:
- name: conformance
  context:
    cluster: conformance
    user: $name
current-context: conformance
KUBECONFIG
}

# Everything the control plane and the e2e suite need: pki_make DIR SERVER_URL
pki_make() {
  local dir=$1 server=$2
  mkdir -p "$dir"
  chmod 0700 "$dir"
  pki_openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -subj "/CN=tskubelet-conformance-ca" \
    -days 2 -sha256 -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" -out "$dir/ca.crt"
  pki_cert "$dir" apiserver "/CN=kube-apiserver" \
    "IP:127.0.0.1,IP:$SERVICE_CLUSTER_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  # What the API server shows a kubelet when it proxies logs, exec and port-forward to it.
  pki_cert "$dir" apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  pki_cert "$dir" admin "/O=system:masters/CN=conformance-admin"
  pki_cert "$dir" controller-manager "/CN=system:kube-controller-manager"
  pki_cert "$dir" scheduler "/CN=system:kube-scheduler"
  local who
  for who in admin controller-manager scheduler; do pki_kubeconfig "$dir" "$who" "$server"; done
  pki_openssl genrsa -out "$dir/sa.key" 2048
  pki_openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub"
}

# A kubelet's identity: group system:nodes, user system:node:<node>, as the Node authorizer and the
# NodeRestriction admission plugin expect. pki_node DIR NODE_NAME SERVER_URL
pki_node() {
  local dir=$1 node=$2 server=$3
  pki_cert "$dir" "kubelet-$node" "/O=system:nodes/CN=system:node:$node"
  pki_kubeconfig "$dir" "kubelet-$node" "$server"
}
