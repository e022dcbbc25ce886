"""Images the platform sets itself (not through a chart's default): by exact tag, and by digest where the publisher
records one."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .pins import Pin

#: The secondary bin-packing scheduler runs the upstream kube-scheduler image of the cluster's minor version (the
#: patch releases EKS ships its kube-proxy builds from). By tag only: the publisher's record of registry.k8s.io's
#: digests, the promoter manifest (github.com/kubernetes/k8s.io, registry.k8s.io/images/k8s-staging-kubernetes/
#: images.yaml, `- name: kube-scheduler`), lists neither tag in the newest copy that could be read (commit
#: ecf019a88caa0923c610e8982ca44a460c0303e5 ends at v1.34.0 and v1.35.0-alpha.0). Add each tag's digest from
#: that file (`digest=`) when it does.
KUBE_SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler"
KUBE_SCHEDULER: Mapping[str, Pin] = MappingProxyType(
    {
        minor: Pin("kube-scheduler", patch, "https://kubernetes.io/releases/ (registry.k8s.io/kube-scheduler)")
        for minor, patch in (("1.34", "v1.34.6"), ("1.35", "v1.35.3"))
    }
)

#: The controller image of that release (the chart in git names a staging build; the release sets this one). By tag
#: only: the promoter manifest that records registry.k8s.io's digests (github.com/kubernetes/k8s.io,
#: registry.k8s.io/images/k8s-staging-kueue/images.yaml) lists `kueue` up to v0.13.3 in the newest copy that could be
#: read (commit 2ad855ab17653d663e0883b8655ae7e3c08fdea0).
KUEUE_IMAGE = Pin(
    "registry.k8s.io/kueue/kueue", "v0.19.2", "https://github.com/kubernetes-sigs/kueue/releases/tag/v0.19.2"
)
#: The image kube-prometheus-stack's CRD upgrade job copies its CRDs with (the chart defaults to `latest`), by tag and
#: the digest of its multi-platform index as Docker's official-images record lists it (`docker pull busybox@...` at
#: the head of the file in `source`).
BUSYBOX = Pin(
    "busybox",
    "1.37.0",
    "https://github.com/docker-library/repo-info/blob/01a7054230d50b3dccaf8d579f161c522be8c9f0"
    "/repos/busybox/remote/1.37.0.md",
    digest="sha256:9db7b59979c38555a39def84a31fb98b5296952f9e3afd4f6f11f05b07adfab0",
)
