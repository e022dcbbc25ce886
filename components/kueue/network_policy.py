"""Kueue's NetworkPolicies (pure): default deny, and the paths its controller uses.

The controller calls only the Kubernetes API (443). The API server calls it twice: its admission webhooks (the
manager's `webhook-server` port, 9443) and the aggregated visibility API (`visibility`, 8082, behind the
APIService's Service), both on the controller's pods (kueue chart 0.19.2, templates/manager/manager.yaml). Its
metrics are not scraped (`enablePrometheus` stays false), so nothing else is open.
"""

from __future__ import annotations

from .. import network_policies as netpol
from ..network_policies import Manifest

#: The controller's pods (the chart's selector labels, templates/_helpers.tpl `kueue.selectorLabels`).
CONTROLLER_POD = {"control-plane": "controller-manager"}
WEBHOOK_PORT = 9443
VISIBILITY_PORT = 8082


def policies(namespace: str) -> dict[str, Manifest]:
    """Every policy of Kueue's namespace, keyed by name."""
    ports = [WEBHOOK_PORT, VISIBILITY_PORT]
    return netpol.system_namespace(namespace, webhook_ports=ports, webhook_pods=CONTROLLER_POD)
