"""Kubeflow's pins: the release, the upstream trees its manifests are rendered from (at exact commits), and the
exact images that replace those its manifests name by a moving tag."""

from __future__ import annotations

from .images import BUSYBOX
from .pins import ImagePin, Pin, SourcePin

#: Kubeflow community-distribution (formerly kubeflow/manifests) release; it needs Kubernetes 1.35 or newer.
#: Real runs fetch the four repositories below (`python -m components.kubeflow fetch`), digest-checked.
KUBEFLOW = Pin("kubeflow", "26.03.1", "https://github.com/kubeflow/community-distribution/releases/tag/26.03.1")
#: Kubeflow Pipelines as 26.03.1 deploys it (its pipeline kustomizations tag every kfp-* image 2.16.1); the tag's
#: commit in kubeflow/pipelines is the source of what the Pipelines-on-S3 render gives the UI, the API server and the
#: launcher (components/kubeflow/pipelines.py). Not fetched: the images are upstream's, only their contract is read.
KUBEFLOW_PIPELINES = Pin(
    "kubeflow-pipelines",
    "2.16.1",
    "https://github.com/kubeflow/pipelines/tree/67a73cf809f7c76fee33c749f302f2bceedd8fab",
)


#: Community-distribution at the commit third-party pins of 26.03.1 name (`f09f3ee`); under applications/, common/
#: and example/ it renders the same as tag 26.03.1-rc.2.
COMMUNITY_DISTRIBUTION = SourcePin(
    "kubeflow/community-distribution", "26.03.1", "f09f3eeaa25cc852665f460497a42b7fc68639ac", "community-distribution"
)
ARGO_WORKFLOWS = SourcePin(
    "argoproj/argo-workflows",
    "v3.7.3",
    "bded09fe4abd37cb98d7fc81b4c14a6f5034e9ab",
    "remote/argoproj/argo-workflows@v3.7.3",
)
JOBSET = SourcePin(
    "kubernetes-sigs/jobset",
    "v0.11.0",
    "f7035a420bb6ebfe7f05494ce2fdff12ade319bf",
    "remote/kubernetes-sigs/jobset@v0.11.0",
)
LWS = SourcePin(
    "kubernetes-sigs/lws", "v0.8.0", "fc19b9ae9b0113d228ba15f4b62b06bea434b510", "remote/kubernetes-sigs/lws@v0.8.0"
)

SOURCES: tuple[SourcePin, ...] = (COMMUNITY_DISTRIBUTION, ARGO_WORKFLOWS, JOBSET, LWS)


def _image_pin(moving: str, tag: str, digest: str, source: str) -> ImagePin:
    return ImagePin(moving, Pin(moving.split(":")[0], tag, source, digest=digest))


#: Docker official images are recorded, tag by tag with each tag's index digest, in docker-library/repo-info
#: (`repos/<image>/remote/<tag>.md`, rewritten at each rebuild). Each record below is named where it was read: that
#: repository, or a fork that keeps the history it has since rewritten (maxmood96/repo-info; hiramtibbit/repo-info for
#: 2018), at a commit.
_REPO_INFO = "docker-library/repo-info repos/{path}, https://github.com/{fork}/blob/{commit}/repos/{path}"

#: Every image a rendered Kubeflow object names by a moving tag, each replaced wherever it appears
#: (`kubeflow.image_pins`).
#: Exact tags as of Kubeflow 26.03.1 (March 2026); the digest is the tag's multi-architecture index (amd64 and arm64
#: among its platforms, `image_architectures.json`).
KUBEFLOW_IMAGES: tuple[ImagePin, ...] = (
    # Pipelines' MySQL. mysql:8.4 named 8.4.8 from January to April 2026; this is the 2026-01-28 build of 8.4.8.
    _image_pin(
        "mysql:8.4",
        "8.4.8",
        "sha256:f1c7674d8dd3c94f439b0d607792187d55bd861f94e8c6d683b959b577152bdc",
        _REPO_INFO.format(
            fork="maxmood96/repo-info", commit="edd6b37efc9a76c57875308717447a126f363ffa", path="mysql/remote/8.4.8.md"
        ),
    ),
    # Katib's MySQL (kubeflow.components.katib). mysql:8.0 named 8.0.45 from January to April 2026; its
    # 2026-01-21 build.
    _image_pin(
        "mysql:8.0",
        "8.0.45",
        "sha256:0546f878adee48eef82ccf936fc8ff932bdaa180ee614a8043ca917533654bc1",
        _REPO_INFO.format(
            fork="maxmood96/repo-info", commit="3174d82a91df149e63f154f07a6243582a18f1a7", path="mysql/remote/8.0.45.md"
        ),
    ),
    # The Hub's per-team model registry database. postgres:16-alpine named 16.13-alpine from February 2026; the
    # record's build of 2026-04-15 (Alpine 3.23.4).
    _image_pin(
        "postgres:16-alpine",
        "16.13-alpine",
        "sha256:32ebb7185baf2c9d38f91684417d140c0745aeff5082dfbb62edb330c2af6197",
        _REPO_INFO.format(
            fork="maxmood96/repo-info",
            commit="7e8e1dbeff1cda24c7f1218e81585f03728722d6",
            path="postgres/remote/16.13-alpine.md",
        ),
    ),
    # Istio's sidecar injector names it in its `grpc-agent` template's init container (used only by pods that ask
    # for that template, none of Kubeflow's). busybox:1.28 last moved to 1.28.4 (May 2018): the record of
    # busybox:1.28 at this commit lists the same amd64 image as that of 1.28.4, in the full multi-architecture index.
    _image_pin(
        "busybox:1.28",
        "1.28.4",
        "sha256:16e7a348e22a062544d4f288bb2575c0fec3dee8199b28c5f20ec4361b017ba1",
        _REPO_INFO.format(
            fork="hiramtibbit/repo-info",
            commit="f0319c3f4cf3f99bd9d270a7c746183775cc54d7",
            path="busybox/remote/1.28.md",
        ),
    ),
    # The Hub's model catalog names plain `busybox` (latest) for an init container; latest has been 1.37.0 since
    # September 2024, the release kube-prometheus-stack's job runs too (BUSYBOX). The record's build of 2026-05-22.
    ImagePin("busybox", BUSYBOX),
)
