# Helm v4.3.2 built from test-support/control-plane/helm (see README.md), run in this folder:
helm template --kube-version 1.30.0 --namespace apps rel chart > expected.yaml
