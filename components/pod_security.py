"""The Pod Security Admission levels of the namespaces where teams run their pods (team namespaces, and the
namespaces of shared team volumes)."""

from __future__ import annotations

from collections.abc import Mapping

#: Team namespaces enforce `baseline`: no host network, PID, paths or privilege (a hostNetwork pod would read the
#: node's instance credentials whatever the IMDS hop limit); `restricted` is warned about and audited.
TEAM_POD_SECURITY: Mapping[str, str] = {
    "pod-security.kubernetes.io/enforce": "baseline",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/audit": "restricted",
}
