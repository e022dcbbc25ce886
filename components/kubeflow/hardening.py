"""Kubeflow's workloads brought up to the rest of the platform (pure): oauth2-proxy hardened like upstream's own
workloads (Pipelines' and Argo's run non-root, without privilege escalation or capabilities, under RuntimeDefault
seccomp), and a CPU and memory request on every container, init containers included.

oauth2-proxy's upstream Deployment (common/oauth2-proxy/base/deployment.yaml) sets its container's context but no
pod context and a writable root file system. Its image is oauth2-proxy v7.15.2 on `gcr.io/distroless/static:nonroot`
(oauth2-proxy v7.15.2 Makefile, `DOCKER_BUILD_RUNTIME_IMAGE`), whose user is 65532; it writes no file (sessions live
in the cookie; its configuration is mounted read-only).

Requests: upstream leaves about two dozen containers without (Dex, oauth2-proxy, most of Pipelines', the dashboard's,
the notebooks' web apps, Katib's, Spark's, the Hub's). The scheduler and Karpenter count only what is requested, so an
unrequested pod lands on a node with no room left for it. Each such container gets `FLOOR`, a floor that makes it
count, not a measurement (no limit is set, so none is throttled or killed for it), or its entry in `REQUESTS`, where
a closer figure has a source. A request upstream already sets is never changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .objects import Manifest, pod_template
from .transform import clone

OAUTH2_PROXY = ("Deployment", "oauth2-proxy", "oauth2-proxy")
#: The distroless `nonroot` user, which oauth2-proxy's image runs as.
NONROOT = 65532
POD_CONTEXT: Mapping[str, Any] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_CONTEXT: Mapping[str, Any] = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "runAsUser": NONROOT,
    "runAsGroup": NONROOT,
    "seccompProfile": {"type": "RuntimeDefault"},
}

#: What an unrequested container asks for.
FLOOR: Mapping[str, str] = {"cpu": "10m", "memory": "64Mi"}
#: Closer figures, by (namespace, workload, container), each with its source.
REQUESTS: Mapping[tuple[str, str, str], Mapping[str, str]] = {
    # Katib's MySQL 8.0: what upstream requests for Pipelines' MySQL 8.4, the same server doing the same kind of work
    # (applications/pipeline/upstream/third-party/mysql/base/mysql-deployment.yaml: 100m, 800Mi).
    ("kubeflow", "katib-mysql", "katib-mysql"): {"cpu": "100m", "memory": "800Mi"},
}


def _oauth2_proxy(obj: Manifest) -> Manifest:
    obj = clone(obj)
    spec = obj["spec"]["template"]["spec"]
    spec["securityContext"] = {**(spec.get("securityContext") or {}), **POD_CONTEXT}
    for container in spec["containers"]:
        container["securityContext"] = {**(container.get("securityContext") or {}), **CONTAINER_CONTEXT}
    return obj


def harden_oauth2_proxy(objects: Iterable[Manifest]) -> list[Manifest]:
    """oauth2-proxy's pod and containers with the hardened contexts (upstream's values kept where these add none)."""
    return [
        _oauth2_proxy(o) if (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) == OAUTH2_PROXY else o
        for o in objects
    ]


def _unrequested(template: Mapping[str, Any]) -> bool:
    spec = template.get("spec") or {}
    return any(
        not {"cpu", "memory"} <= set((c.get("resources") or {}).get("requests") or {})
        for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
    )


def _requested(obj: Manifest) -> Manifest:
    obj = clone(obj)
    namespace, name = obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
    spec = (pod_template(obj) or {})["spec"]
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        wanted = REQUESTS.get((namespace, name, container["name"]), FLOOR)
        requests = (container.get("resources") or {}).get("requests") or {}
        container["resources"] = {
            **(container.get("resources") or {}),
            "requests": {**{k: v for k, v in wanted.items() if k not in requests}, **requests},
        }
    return obj


def requested(objects: Iterable[Manifest]) -> list[Manifest]:
    """Every workload's containers with a CPU and a memory request."""
    return [_requested(o) if (t := pod_template(o)) is not None and _unrequested(t) else o for o in objects]
