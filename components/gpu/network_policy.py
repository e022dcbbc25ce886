"""The GPU Operator's namespace's NetworkPolicies (pure): default deny; its pods talk only to the API server (the
operator, Node Feature Discovery, the operands' validators) and serve only Prometheus (the DCGM exporter, the
operator's metrics). The device plugin talks to the kubelet over a socket on the node, which no policy governs."""

from __future__ import annotations

from .. import network_policies as netpol
from ..network_policies import Manifest


def policies(namespace: str, monitoring_namespace: str | None) -> dict[str, Manifest]:
    """Every policy of the operator's namespace, keyed by name."""
    return netpol.system_namespace(namespace, monitoring_namespace=monitoring_namespace)
