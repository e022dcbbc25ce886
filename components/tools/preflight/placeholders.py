"""Values left as the examples' placeholders (pure): documentation address ranges and example e-mail domains where
they reach a real system. An API endpoint open only to 203.0.113.0/24 admits nobody, so `pulumi up` cannot reach the
cluster it creates (the deploy hangs on the first in-cluster object); a Kubeflow user `@example.org` is nobody.

RFC 5737 reserves 192.0.2.0/24, 198.51.100.0/24 and 203.0.113.0/24 for documentation; RFC 2606 and RFC 6761
reserve example.com, example.net and example.org (and their subdomains) likewise. AWS's documentation writes its
examples' account as 123456789012 or 111122223333 (the IAM User Guide, "IAM identifiers": ARN examples); an admin
role there is nobody's, and with it as the only admin principal nobody administers the cluster.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ...kubeflow.auth_config import OidcConnectorConfig
from ...platform.config import PlatformConfig

DOCUMENTATION_RANGES = tuple(
    ipaddress.ip_network(cidr) for cidr in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")
)
EXAMPLE_DOMAINS = ("example.com", "example.net", "example.org")
EXAMPLE_ACCOUNTS = ("123456789012", "111122223333")


@dataclass(frozen=True)
class Placeholder:
    key: str  # the config key, as the stack file spells it
    value: str
    why: str


def _documentation_range(cidr: str) -> bool:
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False
    return any(network.version == r.version and network.overlaps(r) for r in DOCUMENTATION_RANGES)


def _example_email(email: str) -> bool:
    domain = email.rpartition("@")[2].lower()
    return any(domain == d or domain.endswith(f".{d}") for d in EXAMPLE_DOMAINS)


def placeholders(config: PlatformConfig) -> list[Placeholder]:
    """Every placeholder value of the stack's config, in the order of the stack file."""
    return [*_documentation_cidrs(config), *_example_admins(config), *_kubeflow_placeholders(config)]


def _documentation_cidrs(config: PlatformConfig) -> list[Placeholder]:
    """Documentation address ranges (RFC 5737) among the CIDRs that admit people to the endpoint and dashboard."""
    endpoint = config.cluster.endpoint
    cidrs = [
        ("cluster.endpoint.publicCidrs", endpoint.public_cidrs, "the public API endpoint admits nobody from it"),
        ("cluster.endpoint.privateCidrs", endpoint.private_cidrs, "the private endpoint admits nobody from it"),
        (
            "kubeflow.access.allowedCidrs",
            config.kubeflow.access.allowed_cidrs,
            "the dashboard's load balancer admits nobody from it",
        ),
    ]
    return [
        Placeholder(key, str(cidr), f"a documentation range (RFC 5737): {why}")
        for key, values, why in cidrs
        for cidr in values
        if _documentation_range(str(cidr))
    ]


def _example_admins(config: PlatformConfig) -> list[Placeholder]:
    """Admin principals in the AWS documentation's example accounts."""
    found: list[Placeholder] = []
    for name, arn in sorted(config.cluster.admin_principals.items()):
        account = str(arn).split(":")[4] if str(arn).count(":") >= 5 else ""
        if account in EXAMPLE_ACCOUNTS:
            found.append(
                Placeholder(
                    f"cluster.adminPrincipals.{name}",
                    str(arn),
                    "the AWS documentation's example account: nobody can administer the cluster as it",
                )
            )
    return found


def _kubeflow_placeholders(config: PlatformConfig) -> list[Placeholder]:
    """With Kubeflow on: example domains (RFC 2606) and stand-ins where its people sign in (the admin, the identity
    providers, the teams' owners)."""
    kubeflow = config.kubeflow
    if not kubeflow.enabled:
        return []
    found: list[Placeholder] = []
    if kubeflow.admin_email and _example_email(kubeflow.admin_email):
        found.append(
            Placeholder(
                "kubeflow.adminEmail",
                kubeflow.admin_email,
                "an example domain (RFC 2606): Dex's admin user is nobody's",
            )
        )
    for key, connector in sorted(kubeflow.auth.connectors.items()):
        found += _connector_placeholders(f"kubeflow.auth.connectors.{key}", connector)
    for name, team in sorted(kubeflow.teams.items()):
        if _example_email(team.owner):
            found.append(
                Placeholder(
                    f"kubeflow.teams.{name}.owner",
                    team.owner,
                    "an example domain (RFC 2606): nobody can sign in as the Profile's owner",
                )
            )
    return found


def _connector_placeholders(where: str, connector: OidcConnectorConfig) -> list[Placeholder]:
    """An identity provider's example issuer, stand-in client id and example e-mail domains."""
    found: list[Placeholder] = []
    host = connector.issuer.removeprefix("https://").split("/")[0]
    if _example_email(f"x@{host}"):
        found.append(
            Placeholder(f"{where}.issuer", connector.issuer, "an example domain (RFC 2606): no identity provider")
        )
    if "replace" in connector.client_id.lower():
        found.append(Placeholder(f"{where}.clientId", connector.client_id, "the example's stand-in: no client"))
    for domain in connector.email_domains:
        if _example_email(f"x@{domain}"):
            found.append(
                Placeholder(f"{where}.emailDomains", domain, "an example domain (RFC 2606): nobody signs in from it")
            )
    return found
