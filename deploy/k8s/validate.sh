#!/usr/bin/env bash
# Validates the Kubernetes manifests here against the Kubernetes OpenAPI schemas, strictly
# (unknown fields are errors), with `kubernetes-validate` from PyPI, which bundles the schemas
# (no cluster or network access beyond the package install).
set -euo pipefail
cd "$(dirname "$0")"
venv="${REIN_K8S_VENV:-${TMPDIR:-/tmp}/rein-k8s-validate}"
if [ ! -x "$venv/bin/kubernetes-validate" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "kubernetes-validate==1.37.0"
fi
for version in 1.31.0 1.37.0; do
  "$venv/bin/kubernetes-validate" --strict --kubernetes-version "$version" batch-job.yaml
done
