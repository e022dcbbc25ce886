"""Pod Security Admission as the API server applies it: which checks of the `baseline` and `restricted` levels a pod
template fails (Kubernetes "Pod Security Standards", the checks of the latest version), and the pods the platform
installs into a namespace whose enforced level they fail. A pod refused by admission never starts: its Deployment
or DaemonSet stays at zero, with only an event to say why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .workloads import pod_template

ENFORCE = "pod-security.kubernetes.io/enforce"
#: Capabilities `baseline` lets a container add.
_BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
#: Volume types `restricted` allows.
_RESTRICTED_VOLUMES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "image",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
_SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)


def _containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        *(spec.get("initContainers") or []),
        *(spec.get("containers") or []),
        *(spec.get("ephemeralContainers") or []),
    ]


def baseline_failures(spec: Mapping[str, Any]) -> list[str]:
    """The `baseline` checks a pod spec fails."""
    failures = [f"{field}=true" for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field)]
    failures += [f"hostPath volume {v['name']}" for v in spec.get("volumes") or [] if "hostPath" in v]
    pod_context = spec.get("securityContext") or {}
    if (pod_context.get("seccompProfile") or {}).get("type") == "Unconfined":
        failures.append("seccompProfile Unconfined")
    failures += [f"sysctl {s['name']}" for s in pod_context.get("sysctls") or [] if s["name"] not in _SAFE_SYSCTLS]
    for container in _containers(spec):
        name, context = container["name"], container.get("securityContext") or {}
        if context.get("privileged"):
            failures.append(f"container {name} is privileged")
        added = set((context.get("capabilities") or {}).get("add") or []) - _BASELINE_CAPABILITIES
        if added:
            failures.append(f"container {name} adds {', '.join(sorted(added))}")
        if any(port.get("hostPort") for port in container.get("ports") or []):
            failures.append(f"container {name} uses a hostPort")
        if (context.get("seccompProfile") or {}).get("type") == "Unconfined":
            failures.append(f"container {name} seccompProfile Unconfined")
        if context.get("procMount", "Default") != "Default":
            failures.append(f"container {name} procMount {context['procMount']}")
    return failures


def restricted_failures(spec: Mapping[str, Any]) -> list[str]:
    """The `restricted` checks (those of `baseline` included) a pod spec fails."""
    failures = baseline_failures(spec)
    failures += [
        f"volume {v['name']} of type {kind}"
        for v in spec.get("volumes") or []
        for kind in v
        if kind != "name" and kind not in _RESTRICTED_VOLUMES and kind != "hostPath"
    ]
    pod_context = spec.get("securityContext") or {}
    pod_non_root = pod_context.get("runAsNonRoot") is True
    pod_seccomp = (pod_context.get("seccompProfile") or {}).get("type") in ("RuntimeDefault", "Localhost")
    if pod_context.get("runAsUser") == 0:
        failures.append("runAsUser 0")
    for container in _containers(spec):
        name, context = container["name"], container.get("securityContext") or {}
        if context.get("allowPrivilegeEscalation") is not False:
            failures.append(f"container {name} does not set allowPrivilegeEscalation=false")
        non_root = context.get("runAsNonRoot", pod_non_root if "runAsNonRoot" not in context else None)
        if non_root is not True:
            failures.append(f"container {name} does not run as non-root (runAsNonRoot)")
        if context.get("runAsUser") == 0:
            failures.append(f"container {name} runAsUser 0")
        seccomp = (context.get("seccompProfile") or {}).get("type")
        if not (seccomp in ("RuntimeDefault", "Localhost") or (seccomp is None and pod_seccomp)):
            failures.append(f"container {name} has no RuntimeDefault or Localhost seccompProfile")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            failures.append(f"container {name} does not drop ALL capabilities")
        added = set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}
        if added and not set(added) - _BASELINE_CAPABILITIES:
            failures.append(f"container {name} adds {', '.join(sorted(added))}")
    return failures


_CHECKS = {"baseline": baseline_failures, "restricted": restricted_failures}


def refused(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every pod template of `objects` that its namespace's enforced level refuses, with the checks it fails."""
    objects = list(objects)
    levels = {
        obj["metadata"]["name"]: (obj["metadata"].get("labels") or {}).get(ENFORCE)
        for obj in objects
        if obj.get("kind") == "Namespace"
    }
    found = []
    for obj in objects:
        template = pod_template(obj)
        namespace = obj["metadata"].get("namespace", "")
        check = _CHECKS.get(str(levels.get(namespace)))
        if template is None or check is None:
            continue
        failures = check(template.get("spec") or {})
        if failures:
            found.append(
                f"{obj['kind']} {namespace}/{obj['metadata']['name']} is refused by the namespace's "
                f"{levels[namespace]!r} Pod Security level: {'; '.join(failures)}"
            )
    return found
