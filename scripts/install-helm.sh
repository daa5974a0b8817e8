#!/usr/bin/env bash
# Installs the pinned helm that the deploy tests (deploy/deploy_test.go) and `make manifests`
# use, and prints its path on stdout. Debian has no helm package, so it is built from its Go
# module with the go command (the Go module proxy): about 2-3 minutes on 2 cores the first
# time, then nothing. Idempotent: an installed binary of the right version is kept.
#
# Environment:
#   NDBENCH_CACHE   cache root (default $HOME/.cache/ndbench); helm lands in
#                   $NDBENCH_CACHE/helm-$HELM_VERSION/bin/helm.
set -euo pipefail

HELM_VERSION=v3.22.0
# The Kubernetes version helm assumes when no cluster is asked (helm template, helm lint):
# the one of the k8s.io modules helm $HELM_VERSION is built with, as its release builds set it.
K8S_MAJOR=1
K8S_MINOR=37
cache="${NDBENCH_CACHE:-$HOME/.cache/ndbench}"
dir="$cache/helm-$HELM_VERSION"
helm="$dir/bin/helm"

die() { echo "install-helm: $*" >&2; exit 1; }

ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
for pkg in pkg/lint/rules pkg/chartutil; do
  ldflags+=" -X helm.sh/helm/v3/$pkg.k8sVersionMajor=$K8S_MAJOR -X helm.sh/helm/v3/$pkg.k8sVersionMinor=$K8S_MINOR"
done
# The marker holds the build's flags, so a change of them here rebuilds.
marker="$dir/.installed"
installed() {
  [ -x "$helm" ] && [ -f "$marker" ] && [ "$(cat "$marker")" = "$ldflags" ] &&
    [ "$("$helm" version --template '{{.Version}}' 2>/dev/null)" = "$HELM_VERSION" ]
}

if ! installed; then
  command -v go >/dev/null 2>&1 || die "the go command is needed to build helm $HELM_VERSION"
  echo "install-helm: building helm $HELM_VERSION into $dir (go install, 2-3 minutes once)" >&2
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  # Outside any module, with the user's GOFLAGS cleared: helm is built from its own go.mod.
  # The versions go in by -X as helm's release builds do.
  (cd "$tmp" && GOFLAGS= GOBIN="$tmp/bin" CGO_ENABLED=0 go install -trimpath -ldflags "$ldflags" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2) || die "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION failed"
  mkdir -p "$dir/bin"
  rm -f "$marker"
  mv -f "$tmp/bin/helm" "$helm"   # whole or not at all: an interrupted build leaves no binary
  echo "$ldflags" >"$marker"
  installed || die "$helm does not report version $HELM_VERSION"
fi
echo "$helm"
