"""The `kubeflow.auth` section and `kubeflow.access.clusterTokens`: who signs in and how machines call the gateway.

eks-ml-platform:kubeflow:
  auth:
    connectors:
      corp:                                 # Dex's connector id
        name: Corp SSO
        issuer: https://login.corp.example/oauth2/default
        clientId: 0oa1b2c3d4
        clientSecretKey: kubeflowCorpClientSecret   # pulumi config set --secret kubeflowCorpClientSecret ...
        emailDomains: [corp.example]
    staticUsers: {alice: alice@corp.example}        # dev: passwords generated, in the kubeflowUserPasswords output
    admins: [head-of-ml@corp.example]
  access:
    clusterTokens: {audiences: [pipelines.kubeflow.org], namespaces: [ci]}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, field_validator
from pydantic.alias_generators import to_camel

from ..config.validation import matches
from .access import ClusterTokenSpec
from .auth import OidcConnector, SignIn, StaticUser, is_dex_user

Email = Annotated[StrictStr, matches(r"[^@\s]+@[^@\s]+\.[^@\s]+", "an email address like 'lead@example.org'")]
Name = Annotated[
    StrictStr, matches(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", "a DNS label (lowercase letters, digits, '-')")
]
HttpsUrl = Annotated[StrictStr, matches(r"https://[^\s/]+(/\S*)?", "an https:// URL")]
Domain = Annotated[
    StrictStr, matches(r"([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}", "a lowercase email domain like 'corp.example'")
]
ConfigKey = Annotated[
    StrictStr,
    matches(r"[A-Za-z][A-Za-z0-9_-]*", "the name of a key of this project's config, like 'kubeflowOidcClientSecret'"),
]
RedirectUri = Annotated[
    StrictStr,
    matches(
        r"(https://[^\s/]+|http://localhost(:\d+)?)/\S*/callback",
        "an https:// URL (or http://localhost:<port>) ending in /callback",
    ),
]
Role = Literal["edit", "view"]
#: Audiences that would let tokens made for something else in: IRSA's (every pod with an IAM role carries one).
REFUSED_AUDIENCES = {"sts.amazonaws.com": "IRSA's audience: every pod with an IAM role holds such a token"}
#: Where a browser signing in through the port-forward of docs/kubeflow.md comes back to.
PORT_FORWARD_CALLBACK = "http://localhost:8080/dex/callback"


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class OidcConnectorConfig(_Model):
    """A Dex OIDC connector (Cognito, Okta, Entra ID, Google and GitHub-backed IdPs all speak OIDC)."""

    name: StrictStr = Field(min_length=1, description="the button's label on Dex's sign-in page")
    issuer: HttpsUrl = Field(description="the identity provider's issuer URL (its discovery document's `issuer`)")
    client_id: StrictStr = Field(min_length=1, description="the client ID registered with the identity provider")
    client_secret_key: ConfigKey = Field(
        description="the key of this project's config holding the client secret, set with `pulumi config set "
        "--secret <key> <secret>` (never a plain value in the stack file)"
    )
    email_domains: tuple[Domain, ...] = Field(
        min_length=1,
        description="the email domains of the people this connector signs in; oauth2-proxy admits only these (and "
        "the static users'), and team owners, contributors and admins must be in one",
    )
    redirect_uri: RedirectUri | None = Field(
        default=None,
        description="Dex's callback as the browser reaches it, registered with the identity provider; none: "
        f"`https://<access.host>/dex/callback` behind an ALB with a host, {PORT_FORWARD_CALLBACK} with port-forward",
    )
    scopes: tuple[StrictStr, ...] = Field(default=(), description="scopes to ask for; empty: Dex's default")
    insecure_skip_email_verified: StrictBool = Field(
        default=False,
        description="accept users whose `email_verified` claim is missing or false (Entra ID sends none)",
    )


class AuthConfig(_Model):
    """Sign-in besides the admin: connectors to the company's identity provider, static users for dev, and admins."""

    connectors: dict[Name, OidcConnectorConfig] = Field(
        default={}, description="Dex OIDC connectors keyed by Dex's connector `id`"
    )
    static_users: dict[Name, Email] = Field(
        default={},
        description="extra Dex users with generated passwords, username to email (for dev; the passwords are the "
        "`kubeflowUserPasswords` output)",
    )
    admins: tuple[Email, ...] = Field(
        default=(),
        description="who KFAM and the dashboard treat as cluster admins besides `adminEmail`; each must be able to "
        "sign in",
    )


class ClusterTokens(_Model):
    """Service-account tokens of the cluster accepted at the gateway, and who in the cluster may reach it."""

    audiences: tuple[StrictStr, ...] = Field(
        default=("pipelines.kubeflow.org",),
        min_length=1,
        description="the token audiences the gateway accepts (a projected token's `audience`); never IRSA's",
    )
    namespaces: tuple[Name, ...] = Field(
        default=(),
        description="namespaces whose pods may call the gateway in the cluster, besides the teams' (its "
        "NetworkPolicies admit them)",
    )

    @field_validator("audiences")
    @classmethod
    def _no_foreign_audience(cls, audiences: tuple[str, ...]) -> tuple[str, ...]:
        for audience in audiences:
            if audience in REFUSED_AUDIENCES:
                raise ValueError(f"{audience!r} is {REFUSED_AUDIENCES[audience]}; name an audience of your own")
            if not audience.strip():
                raise ValueError("an audience must not be empty")
        return audiences

    def spec(self) -> ClusterTokenSpec:
        return ClusterTokenSpec(audiences=self.audiences, namespaces=self.namespaces)


def redirect_uri(connector: OidcConnectorConfig, access: Any) -> str | None:
    if connector.redirect_uri is not None:
        return connector.redirect_uri
    if access.mode == "port-forward":
        return PORT_FORWARD_CALLBACK
    return f"https://{access.host}/dex/callback" if access.host is not None else None


def sign_in(auth: AuthConfig, access: Any) -> SignIn:
    """The sign-in of the plan (secrets as placeholders); call after `sign_in_problems` found none."""
    connectors = []
    for key, c in sorted(auth.connectors.items()):
        uri = redirect_uri(c, access)
        assert uri is not None, "sign_in_problems reports a connector without a callback"
        connectors.append(
            OidcConnector(
                id=key,
                name=c.name,
                issuer=c.issuer,
                client_id=c.client_id,
                redirect_uri=uri,
                email_domains=c.email_domains,
                scopes=c.scopes,
                insecure_skip_email_verified=c.insecure_skip_email_verified,
            )
        )
    return SignIn(
        connectors=tuple(connectors),
        static_users=tuple(StaticUser(name, email) for name, email in sorted(auth.static_users.items())),
        admins=auth.admins,
    )


def sign_in_problems(
    admin_email: str, auth: AuthConfig, access: Any, teams: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """(key, problem) for everyone named who could not sign in, and for connectors without a callback."""
    problems: list[tuple[str, str]] = []
    for key, connector in sorted(auth.connectors.items()):
        if redirect_uri(connector, access) is None:
            problems.append(
                (
                    f"auth.connectors.{key}.redirectUri",
                    (
                        "is required with an ALB without access.host: the address browsers reach the dashboard at, "
                        "followed by /dex/callback"
                    ),
                )
            )
    emails = {admin_email.lower(): "adminEmail"}
    for name, email in sorted(auth.static_users.items()):
        if email.lower() in emails:
            problems.append((f"auth.staticUsers.{name}", f"{email} is already {emails[email.lower()]}"))
        emails.setdefault(email.lower(), f"auth.staticUsers.{name}")
    if "admin" in auth.static_users:
        problems.append(("auth.staticUsers.admin", "'admin' is adminEmail's username; choose another"))
    users = sign_in(auth, access) if not problems else None
    if users is None:
        return problems
    domains = sorted({d for c in auth.connectors.values() for d in c.email_domains})
    how = (
        f"a static user (auth.staticUsers), adminEmail, or in a connector's emailDomains ({', '.join(domains)})"
        if domains
        else "adminEmail or a static user (auth.staticUsers): no connector is configured"
    )

    def check(key: str, email: str, who: str) -> None:
        if not is_dex_user(email, admin_email, users):
            problems.append((key, f"{email} cannot sign in, so {who}; make them {how}"))

    for index, email in enumerate(auth.admins):
        check(f"auth.admins[{index}]", email, "they would be an admin nobody can use")
    for name, team in sorted(teams.items()):
        check(f"teams.{name}.owner", team.owner, f"team {name}'s namespace would have no owner who can use it")
        for email in sorted(team.contributors):
            if email.lower() == team.owner.lower():
                problems.append((f"teams.{name}.contributors.{email}", "is the team's owner, who has every right"))
            else:
                check(f"teams.{name}.contributors.{email}", email, "the binding would admit nobody")
    return problems
