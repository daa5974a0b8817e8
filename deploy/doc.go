// Package deploy holds how ndbench is deployed: the container image (Dockerfile), the Helm
// chart (helm/ndbench), the plain Kubernetes manifests rendered from it (kubernetes/) and a
// Grafana dashboard (grafana/). It has no Go code; its tests (build tag integration, run by
// make test) lint and render the chart with helm and check every rendered object strictly
// against the Kubernetes API types (internal/kube). See docs/deploy.md.
package deploy
