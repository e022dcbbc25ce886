"""The remote bases the pinned Kubeflow kustomizations name, each with the local copy that replaces it. The pins
themselves (the four repositories at exact commits, the kubectl whose kustomize renders them) are in
`components.versions`."""

from __future__ import annotations

from dataclasses import dataclass

from ..versions import (  # noqa: F401 - the part reads its pins from here too
    ARGO_WORKFLOWS,
    COMMUNITY_DISTRIBUTION,
    JOBSET,
    KUBECTL,
    KUBEFLOW,
    KUSTOMIZE_VERSION,
    LWS,
    SOURCES,
    SourcePin,
)


@dataclass(frozen=True)
class Remote:
    """A remote base named in an upstream kustomization, and the tree folder that replaces it.

    A `build_from` remote is a release asset rather than a git path: the renderer builds that folder on its own
    first (what the upstream Makefile does to publish the asset) and points the URL at the result."""

    url: str
    local: str
    used_by: tuple[str, ...]
    build_from: str | None = None


_PIPELINE_ARGO = "community-distribution/applications/pipeline/upstream/third-party/argo"
_TRAINER_THIRD_PARTY = "community-distribution/applications/trainer/upstream/third-party"

REMOTES: tuple[Remote, ...] = (
    Remote(
        "https://github.com/argoproj/argo-workflows/manifests/base/crds/minimal?ref=v3.7.3",
        f"{ARGO_WORKFLOWS.folder}/manifests/base/crds/minimal",
        (f"{_PIPELINE_ARGO}/installs/cluster/kustomization.yaml",),
    ),
    Remote(
        "https://github.com/argoproj/argo-workflows/manifests/base/workflow-controller?ref=v3.7.3",
        f"{ARGO_WORKFLOWS.folder}/manifests/base/workflow-controller",
        (f"{_PIPELINE_ARGO}/base/kustomization.yaml",),
    ),
    Remote(
        "https://github.com/argoproj/argo-workflows/manifests/cluster-install-no-crds/workflow-controller-rbac?ref=v3.7.3",
        f"{ARGO_WORKFLOWS.folder}/manifests/cluster-install-no-crds/workflow-controller-rbac",
        (f"{_PIPELINE_ARGO}/installs/cluster/kustomization.yaml",),
    ),
    Remote(
        "https://github.com/kubernetes-sigs/jobset/releases/download/v0.11.0/manifests.yaml",
        f"{JOBSET.folder}/manifests.yaml",
        (f"{_TRAINER_THIRD_PARTY}/jobset/kustomization.yaml",),
        build_from=f"{JOBSET.folder}/config/default",
    ),
    Remote(
        "https://github.com/kubernetes-sigs/lws//config/default?ref=v0.8.0",
        f"{LWS.folder}/config/default",
        (f"{_TRAINER_THIRD_PARTY}/leaderworkerset/kustomization.yaml",),
    ),
)
