"""The engine tier's tools: each one's pinned Go module, where the pin comes from, and what is built from it.

One wrapper Go module per tool sits beside this file (`<folder>/go.mod`, `go.sum`), requiring exactly the version
named here (tests/engine/test_tools.py holds the two together). Everything comes through the Go module proxy; where
it does not serve the version our Python pins ask for, the nearest version it serves is used and `served_instead`
says why.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Binary:
    """One executable: the Go package it is built from (a module path, or `./dir` inside the wrapper module) and the
    variables stamped into it with `-ldflags -X`."""

    name: str
    package: str
    stamps: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Tool:
    folder: str  # the wrapper module, beside this file
    module: str
    version: str
    source: str
    binaries: tuple[Binary, ...]
    #: Our own scripts from `<folder>/scripts/`, installed beside the binaries.
    scripts: tuple[str, ...] = ()
    #: Why this version and not the one our Python pins name (empty: it is that one).
    served_instead: str = ""


_PULUMI_VERSION = "github.com/pulumi/pulumi/sdk/v3/go/common/version.Version"
_KUBE_VERSION = "k8s.io/component-base/version"
_KUBERNETES = "v1.35.4"

TOOLS: tuple[Tool, ...] = (
    Tool(
        folder="pulumi",
        module="github.com/pulumi/pulumi/pkg/v3",
        version="v3.274.0",
        source="github.com/pulumi/pulumi tag v3.274.0 (pkg/cmd/pulumi)",
        binaries=(
            Binary("pulumi", "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi", ((_PULUMI_VERSION, "v3.274.0"),)),
            # Our own language host (langhost/main.go), built against the same SDK module.
            Binary("pulumi-language-python", "./langhost", (("main.version", "3.274.0"),)),
        ),
        scripts=("pulumi-language-python-exec", "pulumi-resource-pulumi-python"),
        served_instead=(
            "pyproject.toml pins the Python SDK pulumi==3.272.0; the module proxy refuses pkg/v3 v3.272.0 and v3.273.0 "
            "('not available') and serves v3.274.0, the nearest release after it. The engine speaks the same "
            "protocol to an SDK two minor releases older. Pulumi's own Python language host "
            "(sdk/python/cmd/pulumi-language-python) is a separate module the proxy serves at no version, so the "
            "language host here is ours."
        ),
    ),
    Tool(
        folder="kubernetes-provider",
        module="github.com/pulumi/pulumi-kubernetes/provider/v4",
        version="v4.0.0-20260115033456-f47bc2d6f199",
        source="github.com/pulumi/pulumi-kubernetes commit f47bc2d6f199 = tag v4.25.0 (provider/)",
        binaries=(
            Binary(
                "pulumi-resource-kubernetes",
                ".",
                (("github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version", "4.25.0"),),
            ),
        ),
        served_instead=(
            "pyproject.toml pins pulumi-kubernetes==4.34.2. The repository tags its provider module v4.x.y, not "
            "provider/v4.x.y, so Go sees no release of it; the proxy serves exactly one pseudo-version, the commit of "
            "v4.25.0. The engine tier runs that provider for every kubernetes resource (Pulumi.yaml maps the plugin "
            "to it whatever version the SDK asks for). Differences between 4.25.0 and 4.34.2 that the tier meets are "
            "listed in docs/engine.md."
        ),
    ),
    Tool(
        folder="control-plane",
        module="k8s.io/kubernetes",
        version=_KUBERNETES,
        source="github.com/kubernetes/kubernetes tag v1.35.4 (cmd/kube-apiserver, kube-controller-manager, "
        "kube-scheduler); staging modules k8s.io/*@v0.35.4",
        binaries=tuple(
            Binary(
                name,
                f"k8s.io/kubernetes/cmd/{name}",
                (
                    (f"{_KUBE_VERSION}.gitVersion", _KUBERNETES),
                    (f"{_KUBE_VERSION}.gitMajor", "1"),
                    (f"{_KUBE_VERSION}.gitMinor", "35"),
                    (f"{_KUBE_VERSION}.gitTreeState", "clean"),
                ),
            )
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
        ),
        served_instead=(
            "components/versions/ DEFAULT_KUBERNETES_VERSION is 1.35 and EKS runs its patch v1.35.3; the proxy "
            "serves v1.35.4 of the 1.35 line and no v1.35.3."
        ),
    ),
    Tool(
        folder="etcd",
        module="go.etcd.io/etcd/server/v3",
        version="v3.6.16",
        source="github.com/etcd-io/etcd tag v3.6.16 (server/); the 3.6 line is the one Kubernetes 1.35 is "
        "released with (cmd/kubeadm/app/constants etcd 3.6.x)",
        binaries=(Binary("etcd", "go.etcd.io/etcd/server/v3"),),
    ),
    Tool(
        folder="kwok",
        module="sigs.k8s.io/kwok",
        version="v0.8.0",
        source="github.com/kubernetes-sigs/kwok tag v0.8.0 (cmd/kwok)",
        binaries=(Binary("kwok", "sigs.k8s.io/kwok/cmd/kwok"),),
    ),
)
