"""KServe's NetworkPolicies (pure): default deny, and the paths its controller uses.

The controller calls only the Kubernetes API (443); the API server calls its webhooks (the chart's
`webhook-server` container port, 9443, behind the `kserve-webhook-server-service` Service). In Standard mode it
calls no model server, so nothing else is open.
"""

from __future__ import annotations

from .. import network_policies as netpol
from ..network_policies import Manifest

#: The controller's pods (the chart's `control-plane` label, kserve-resources v0.16.0 templates/deployment.yaml).
CONTROLLER_POD = {"control-plane": "kserve-controller-manager"}
#: The manager container's `webhook-server` port, called by the API server.
WEBHOOK_PORT = 9443


def policies(namespace: str) -> dict[str, Manifest]:
    """Every policy of KServe's namespace, keyed by name."""
    return netpol.system_namespace(namespace, webhook_ports=[WEBHOOK_PORT], webhook_pods=CONTROLLER_POD)
