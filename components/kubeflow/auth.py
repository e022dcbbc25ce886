"""Who signs in to Kubeflow and what they may do: Dex's connectors and static users, the emails oauth2-proxy admits,
KFAM's cluster admins, and the contributors of each team's namespace, as plain dicts.

Sources of the shapes written here (facts only):
- Dex's OIDC connector: `type: oidc`, `id`, `name`, and `config` with `issuer`, `clientID`, `clientSecret`,
  `redirectURI`, `scopes`, `insecureSkipEmailVerified` (dexidp.io/docs/connectors/oidc/); Dex expands `$VAR` in a
  connector's config from its environment unless `DEX_EXPAND_ENV` is false (dexidp/dex cmd/dex/config.go), so the
  client secret stays in a Secret and never in the ConfigMap.
- Dex's static users: `staticPasswords` entries with `email`, `hashFromEnv`, `username`, `userID` (the pinned tree's
  common/dex config, dexidp.io/docs/connectors/local/).
- KFAM (ghcr.io/kubeflow/dashboard/access-management v2.0.0): `-cluster-admin` takes a comma-separated list of
  emails (kubeflow/dashboard components/access-management/main.go), fed from `profiles-config`'s `ADMIN`; the
  central dashboard asks KFAM who is an admin. A contributor is a RoleBinding and an Istio AuthorizationPolicy,
  both named `user-<email, non-alphanumerics as '-'>-clusterrole-<role>` and annotated `user` and `role`
  (components/access-management/kfam/bindings.go), so the dashboard lists and removes them like its own.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from .objects import Manifest
from .transform import replace

DEX_CONFIG = ("ConfigMap", "auth", "dex")
DEX_PASSWORDS = ("Secret", "auth", "dex-passwords")
OAUTH2_PROXY_CONFIG = ("ConfigMap", "oauth2-proxy", "oauth2-proxy")
OAUTH2_PROXY_PARAMETERS = ("ConfigMap", "oauth2-proxy", "oauth2-proxy-parameters")
PROFILES_CONFIG = ("ConfigMap", "kubeflow", "profiles-config")
#: The env var (from the dex-passwords Secret) holding the admin's bcrypt hash, as upstream names it.
ADMIN_PASSWORD_ENV = "DEX_USER_PASSWORD"
#: The gateway and the Pipelines UI call team namespaces on a user's behalf (profiles-config's principals).
KFAM_PRINCIPALS = (
    "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account",
    "cluster.local/ns/kubeflow/sa/ml-pipeline-ui",
)
USERID_HEADER = "kubeflow-userid"
ROLES: dict[str, str] = {"edit": "kubeflow-edit", "view": "kubeflow-view"}
_EMAIL_DOMAINS_LINE = re.compile(r"^email_domains\s*=.*$", re.MULTILINE)
_STATIC_PLACEHOLDER = "<<kubeflow-secret:static-user:{}>>"
_CONNECTOR_PLACEHOLDER = "<<kubeflow-secret:connector:{}>>"


def static_user_placeholder(name: str) -> str:
    """The stand-in for a static user's bcrypt hash until registration."""
    return _STATIC_PLACEHOLDER.format(name)


def connector_secret_placeholder(connector: str) -> str:
    """The stand-in for a connector's client secret (from the stack's config) until registration."""
    return _CONNECTOR_PLACEHOLDER.format(connector)


def env_name(prefix: str, name: str) -> str:
    return f"{prefix}_{re.sub(r'[^A-Za-z0-9]', '_', name).upper()}"


@dataclass(frozen=True)
class OidcConnector:
    """A Dex OIDC connector: the company's identity provider (Cognito, Okta, Entra ID, Google all speak OIDC)."""

    id: str
    name: str
    issuer: str
    client_id: str
    redirect_uri: str
    email_domains: tuple[str, ...]
    scopes: tuple[str, ...] = ()  # empty: Dex's default (openid, profile, email)
    insecure_skip_email_verified: bool = False

    @property
    def secret_env(self) -> str:
        return env_name("DEX_CONNECTOR", self.id) + "_CLIENT_SECRET"

    def admits(self, email: str) -> bool:
        return email.rpartition("@")[2].lower() in {d.lower() for d in self.email_domains}


@dataclass(frozen=True)
class StaticUser:
    """A Dex static user with a generated password (for dev)."""

    name: str
    email: str

    @property
    def password_env(self) -> str:
        return env_name("DEX_STATIC_USER", self.name) + "_PASSWORD"


@dataclass(frozen=True)
class SignIn:
    """Every way in: the admin (a static user, `credentials.Admin`), other static users, connectors, and who KFAM
    and the dashboard treat as cluster admins."""

    connectors: tuple[OidcConnector, ...] = ()
    static_users: tuple[StaticUser, ...] = ()
    admins: tuple[str, ...] = ()
    #: bcrypt hash per static user name, and client secret per connector id (placeholders by default).
    static_user_hashes: Mapping[str, str] = field(default_factory=dict)
    connector_secrets: Mapping[str, str] = field(default_factory=dict)

    def hash_of(self, user: StaticUser) -> str:
        return self.static_user_hashes.get(user.name, static_user_placeholder(user.name))

    def secret_of(self, connector: OidcConnector) -> str:
        return self.connector_secrets.get(connector.id, connector_secret_placeholder(connector.id))


@dataclass(frozen=True)
class Contributor:
    email: str
    role: Literal["edit", "view"]


def is_dex_user(email: str, admin_email: str, sign_in: SignIn) -> bool:
    """Whether `email` can sign in: the admin, a static user, or in a domain a connector admits."""
    if email.lower() == admin_email.lower():
        return True
    if any(email.lower() == user.email.lower() for user in sign_in.static_users):
        return True
    return any(connector.admits(email) for connector in sign_in.connectors)


def user_id(email: str) -> str:
    """Dex keys a static user's identity by userID: derived from the email, so it is stable."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"mailto:{email}"))


def dex_connector(connector: OidcConnector) -> dict[str, Any]:
    config: dict[str, Any] = {
        "issuer": connector.issuer,
        "clientID": connector.client_id,
        "clientSecret": f"${connector.secret_env}",
        "redirectURI": connector.redirect_uri,
    }
    if connector.scopes:
        config["scopes"] = list(connector.scopes)
    if connector.insecure_skip_email_verified:
        config["insecureSkipEmailVerified"] = True
    return {"type": "oidc", "id": connector.id, "name": connector.name, "config": config}


def dex_config(config: dict[str, Any], admin_email: str, admin_username: str, sign_in: SignIn) -> dict[str, Any]:
    """Dex's config with the admin and the static users (passwords from the environment) and the connectors."""
    users = [(admin_email, ADMIN_PASSWORD_ENV, admin_username)]
    users += [(u.email, u.password_env, u.name) for u in sign_in.static_users]
    config["staticPasswords"] = [
        {"email": email, "hashFromEnv": env, "username": username, "userID": user_id(email)}
        for email, env, username in users
    ]
    config["enablePasswordDB"] = True  # the admin always has a password: the way in when the IdP is down
    if sign_in.connectors:
        config["connectors"] = [dex_connector(c) for c in sign_in.connectors]
    else:
        config.pop("connectors", None)
    return config


def email_domains(admin_email: str, sign_in: SignIn) -> list[str]:
    """The domains oauth2-proxy admits: the connectors' and the static users' (never `*`)."""
    domains = {admin_email.rpartition("@")[2].lower()}
    domains |= {u.email.rpartition("@")[2].lower() for u in sign_in.static_users}
    domains |= {d.lower() for c in sign_in.connectors for d in c.email_domains}
    return sorted(domains)


def _dex(admin_email: str, admin_username: str, sign_in: SignIn) -> Callable[[Manifest], Manifest]:
    def change(obj: Manifest) -> Manifest:
        config = yaml.safe_load(obj["data"]["config.yaml"])
        obj["data"]["config.yaml"] = yaml.safe_dump(
            dex_config(config, admin_email, admin_username, sign_in), sort_keys=False
        )
        return obj

    return change


def _secret_entries(values: Mapping[str, str]) -> Callable[[Manifest], Manifest]:
    def change(obj: Manifest) -> Manifest:
        obj.setdefault("stringData", {}).update(values)
        return obj

    return change


def _oauth2_proxy_domains(domains: list[str]) -> Callable[[Manifest], Manifest]:
    def change(obj: Manifest) -> Manifest:
        text = obj["data"]["oauth2_proxy.cfg"]
        line = "email_domains = [ " + ", ".join(f'"{d}"' for d in domains) + " ]"
        new, count = _EMAIL_DOMAINS_LINE.subn(line, text)
        if count != 1:
            raise ValueError(f"oauth2_proxy.cfg: expected one email_domains line, found {count}")
        obj["data"]["oauth2_proxy.cfg"] = new
        return obj

    return change


def _self_signed_off(obj: Manifest) -> Manifest:
    # oauth2-proxy reaches Dex over plain HTTP inside the cluster and EKS's issuer has a public certificate: nothing
    # here needs it to skip certificate checks (upstream turns it on for kind and the like).
    obj["data"]["ALLOW_SELF_SIGNED_ISSUER"] = "false"
    return obj


def _admins(admins: list[str]) -> Callable[[Manifest], Manifest]:
    def change(obj: Manifest) -> Manifest:
        obj["data"]["ADMIN"] = ",".join(admins)
        return obj

    return change


def cluster_admins(admin_email: str, sign_in: SignIn) -> list[str]:
    """KFAM's admin list: the admin first, then `admins` (each once)."""
    seen: list[str] = []
    for email in (admin_email, *sign_in.admins):
        if email not in seen:
            seen.append(email)
    return seen


def apply(objects: list[Manifest], admin_email: str, admin_username: str, sign_in: SignIn) -> list[Manifest]:
    """Write sign-in into the rendered objects: Dex's users and connectors (their secrets as env of the
    dex-passwords Secret), oauth2-proxy's admitted domains and no self-signed issuer, KFAM's admins."""
    present = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects}
    secrets = {u.password_env: sign_in.hash_of(u) for u in sign_in.static_users}
    secrets.update({c.secret_env: sign_in.secret_of(c) for c in sign_in.connectors})
    changes: dict[tuple[str, str, str], Callable[[Manifest], Manifest]] = {
        DEX_CONFIG: _dex(admin_email, admin_username, sign_in),
        DEX_PASSWORDS: _secret_entries(secrets),
        OAUTH2_PROXY_CONFIG: _oauth2_proxy_domains(email_domains(admin_email, sign_in)),
        OAUTH2_PROXY_PARAMETERS: _self_signed_off,
        PROFILES_CONFIG: _admins(cluster_admins(admin_email, sign_in)),
    }
    return replace(objects, {ident: change for ident, change in changes.items() if ident in present})


# ------------------------------------------------------------------------------------------------ contributors


def binding_name(email: str, role: str) -> str:
    """KFAM's name for a binding: kind, user, roleRef kind and role joined by '-', lowercased, every run of
    non-alphanumerics as one '-'."""
    raw = "-".join(("User", re.sub(r"[^a-zA-Z0-9]+", "-", email), "ClusterRole", role)).lower()
    return re.sub(r"[^a-zA-Z0-9]+", "-", raw)


def contributor_manifests(namespace: str, contributor: Contributor) -> list[Manifest]:
    """The RoleBinding and AuthorizationPolicy KFAM makes when the owner adds a contributor in the dashboard."""
    name = binding_name(contributor.email, contributor.role)
    annotations = {"user": contributor.email, "role": contributor.role}
    role_binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace, "annotations": dict(annotations)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLES[contributor.role]},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": contributor.email}],
    }
    policy = {
        "apiVersion": "security.istio.io/v1beta1",
        "kind": "AuthorizationPolicy",
        "metadata": {"name": name, "namespace": namespace, "annotations": dict(annotations)},
        "spec": {
            "rules": [
                {
                    "from": [{"source": {"principals": list(KFAM_PRINCIPALS)}}],
                    "when": [{"key": f"request.headers[{USERID_HEADER}]", "values": [contributor.email]}],
                }
            ]
        },
    }
    return [role_binding, policy]


def contributors(namespace: str, members: Iterable[Contributor]) -> list[Manifest]:
    return [
        obj for member in sorted(members, key=lambda m: m.email) for obj in contributor_manifests(namespace, member)
    ]


# ------------------------------------------------------------------------------------------------ Dex's CRDs

#: The kinds Dex's Kubernetes storage keeps its state in, which Dex creates at start if missing (dexidp/dex
#: storage/kubernetes: resource names with Kubernetes' own odd plurals). The pinned tree ships only AuthCode; owning
#: the rest means destroy removes them with the rest of Kubeflow.
DEX_KINDS: tuple[tuple[str, str, str], ...] = (
    ("AuthCode", "authcodes", "authcode"),
    ("AuthRequest", "authrequests", "authrequest"),
    ("OAuth2Client", "oauth2clients", "oauth2client"),
    ("RefreshToken", "refreshtokens", "refreshtoken"),
    ("SigningKey", "signingkeies", "signingkey"),
    ("Password", "passwords", "password"),
    ("OfflineSessions", "offlinesessionses", "offlinesessions"),
    ("Connector", "connectors", "connector"),
    ("DeviceRequest", "devicerequests", "devicerequest"),
    ("DeviceToken", "devicetokens", "devicetoken"),
)
DEX_GROUP = "dex.coreos.com"


def dex_crd(kind: str, plural: str, singular: str) -> Manifest:
    """One of Dex's CRDs, shaped as the pinned tree's AuthCode CRD (schemaless: Dex validates its own objects)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{DEX_GROUP}"},
        "spec": {
            "group": DEX_GROUP,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": singular},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


def missing_dex_crds(objects: Iterable[Manifest]) -> list[Manifest]:
    """Dex's CRDs the rendered objects lack."""
    present = {o["metadata"]["name"] for o in objects if o["kind"] == "CustomResourceDefinition"}
    return [dex_crd(*kind) for kind in DEX_KINDS if f"{kind[1]}.{DEX_GROUP}" not in present]
