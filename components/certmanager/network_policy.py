"""cert-manager's NetworkPolicies (pure): default deny, and the paths its three deployments use.

The chart's own policies (`networkPolicy.enabled`, per deployment, v1.20.2) stay off: they admit every pod to the
metrics and health ports and deny nothing by default; these admit only Prometheus to metrics and isolate the whole
namespace, checked with the rest of the platform's policies by the model.
"""

from __future__ import annotations

from .. import network_policies as netpol
from ..network_policies import ANYWHERE, Manifest

CONTROLLER_POD = {"app.kubernetes.io/component": "controller"}
WEBHOOK_POD = {"app.kubernetes.io/component": "webhook"}
#: The webhook's serving port (the chart's `webhook.securePort`), called by the API server.
WEBHOOK_PORT = 10250


def policies(namespace: str, monitoring_namespace: str | None) -> dict[str, Manifest]:
    """Every policy of cert-manager's namespace, keyed by name."""
    # HTTPS out reaches the API server and ACME servers; an ACME issuer's self-checks need more: HTTP-01 fetches the
    # challenge over plain HTTP, DNS-01 asks the domain's authoritative name servers, wherever they are.
    acme_checks = netpol.policy(
        namespace,
        "allow-acme-checks",
        selects=CONTROLLER_POD,
        egress=[
            netpol.rule(
                [netpol.cidr(ANYWHERE)], netpol.ports(80) + netpol.ports(53) + netpol.ports(53, protocol="UDP"), to=True
            )
        ],
    )
    return netpol.system_namespace(
        namespace,
        monitoring_namespace=monitoring_namespace,
        webhook_ports=[WEBHOOK_PORT],
        webhook_pods=WEBHOOK_POD,
        extra=[acme_checks],
    )
