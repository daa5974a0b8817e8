#!/usr/bin/env bash
# Prints deploy/kubernetes/ndbench.yaml: the Helm chart deploy/helm/ndbench rendered with its
# defaults, for `kubectl apply -f`, with an empty token Secret marked REPLACE (a generated
# token would differ on every render and be the same for everyone who applies the file).
# `make manifests` writes it; the deploy tests compare it with the committed file.
#
# Environment:
#   HELM   the helm binary (default: the one scripts/install-helm.sh installs)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
helm="${HELM:-$(bash "$here/install-helm.sh")}"
echo "# Rendered from deploy/helm/ndbench by 'make manifests'; do not edit by hand."
echo "# Put a token in the Secret ndbench-token before applying (see docs/deploy.md)."
echo "# Create the TLS Secret ndbench-tls (tls.crt, tls.key, ca.crt; cert-manager writes these) first (see docs/security.md)."
"$helm" template ndbench "$here/../deploy/helm/ndbench" --namespace default --skip-tests --set token.generate=false
