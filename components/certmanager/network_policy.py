"""cert-manager's NetworkPolicies (pure): default deny, and the paths its three deployments use.

The chart's own policies (`networkPolicy.enabled`, per deployment, v1.20.2) stay off: they admit every pod to the
metrics and health ports and deny nothing by default; these admit only Prometheus to metrics and isolate the whole
namespace, checked with the rest of the platform's policies by the model.
"""

from __future__ import annotations

from components import network_policies as netpol
from components.network_policies import ANYWHERE, Manifest

CONTROLLER_POD = {"app.kubernetes.io/component": "controller"}
WEBHOOK_POD = {"app.kubernetes.io/component": "webhook"}
#: The webhook's serving port (the chart's `webhook.securePort`), called by the API server.
WEBHOOK_PORT = 10250


def policies(namespace: str, monitoring_namespace: str | None) -> dict[str, Manifest]:
    """Every policy of cert-manager's namespace, keyed by name."""
    found = [
        netpol.deny_all(namespace),
        netpol.allow_dns(namespace),
        # The API server, and ACME servers (HTTPS).
        netpol.allow_https_egress(namespace),
        netpol.allow_webhooks(namespace, [WEBHOOK_PORT], selects=WEBHOOK_POD),
        # An ACME issuer's self-checks: HTTP-01 fetches the challenge over plain HTTP, DNS-01 asks the domain's
        # authoritative name servers, wherever they are.
        netpol.policy(
            namespace,
            "allow-acme-checks",
            selects=CONTROLLER_POD,
            egress=[
                netpol.rule(
                    [netpol.cidr(ANYWHERE)],
                    netpol.ports(80) + netpol.ports(53) + netpol.ports(53, protocol="UDP"),
                    to=True,
                )
            ],
        ),
    ]
    if monitoring_namespace is not None:
        found.append(netpol.allow_prometheus(namespace, monitoring_namespace))
    return {p["metadata"]["name"]: p for p in found}
