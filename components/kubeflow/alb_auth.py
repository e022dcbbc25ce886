"""Authentication on the ALB itself, before a request reaches the Istio gateway: the load balancer controller's
authenticate-oidc or authenticate-cognito action on the HTTPS listener, from Ingress annotations.

The contract, as the controller pinned in `components/versions/` (v3.5.0) reads it
(kubernetes-sigs/aws-load-balancer-controller: `docs/guide/ingress/annotations.md#authentication`,
`pkg/ingress/auth_config_builder.go`, `pkg/ingress/config_types.go`, `pkg/ingress/model_build_actions.go`):

- `alb.ingress.kubernetes.io/auth-type`: `none`, `oidc` or `cognito`;
- `auth-idp-oidc`: JSON with `issuer`, `authorizationEndpoint`, `tokenEndpoint`, `userInfoEndpoint` and `secretName`,
  a Secret in the Ingress's namespace holding `clientID` and `clientSecret`;
- `auth-idp-cognito`: JSON with `userPoolARN`, `userPoolClientID`, `userPoolDomain` (the domain's prefix, or a
  custom domain's full name);
- `auth-on-unauthenticated-request` (`authenticate`, `allow`, `deny`), `auth-scope` (space-separated),
  `auth-session-timeout` (seconds).

The controller adds the action only to HTTPS listeners, so the HTTP listener keeps its one redirect to 443. It reads
the OIDC Secret with its own service account, which the chart lets read no Secret
(`clusterSecretsPermissions.allowAllSecrets: false`): a Role for that one Secret and its RoleBinding come with it.
The Cognito action needs `cognito-idp:DescribeUserPoolClient`, which `components.ingress.iam` grants.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from ..ingress.names import NAMESPACE as CONTROLLER_NAMESPACE
from ..ingress.names import SERVICE_ACCOUNT as CONTROLLER_ACCOUNT
from .objects import Manifest

PREFIX = "alb.ingress.kubernetes.io"
AUTH_TYPE = f"{PREFIX}/auth-type"
IDP_OIDC = f"{PREFIX}/auth-idp-oidc"
IDP_COGNITO = f"{PREFIX}/auth-idp-cognito"
ON_UNAUTHENTICATED = f"{PREFIX}/auth-on-unauthenticated-request"
SCOPE = f"{PREFIX}/auth-scope"
SESSION_TIMEOUT = f"{PREFIX}/auth-session-timeout"
#: The Secret the OIDC action reads its client from, in the Ingress's namespace, and the keys the controller reads
#: (`pkg/shared_constants/secret_keys.go`).
CLIENT_SECRET_NAME = "kubeflow-alb-oidc-client"
CLIENT_ID_KEY = "clientID"
CLIENT_SECRET_KEY = "clientSecret"
#: The Role and RoleBinding that let the controller read that Secret (and nothing else).
READER = "aws-load-balancer-controller-oidc-client"
#: Where the client secret goes until registration puts in the value from the stack's config (a Pulumi secret).
CLIENT_SECRET_PLACEHOLDER = "<<kubeflow-secret:alb-oidc-client-secret>>"
#: The ALB's longest session, and its default: 7 days (Elastic Load Balancing, "Authenticate users using an
#: Application Load Balancer").
MAX_SESSION_SECONDS = 7 * 24 * 3600

Unauthenticated = Literal["authenticate", "allow", "deny"]


@dataclass(frozen=True)
class OidcIdp:
    """An OpenID Connect identity provider; the client secret stays a placeholder until registration."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    user_info_endpoint: str
    client_id: str


@dataclass(frozen=True)
class CognitoIdp:
    """A Cognito user pool and its app client (which must have a client secret)."""

    user_pool_arn: str
    user_pool_client_id: str
    user_pool_domain: str


@dataclass(frozen=True)
class AlbAuth:
    """What the ALB does before it forwards a request to the gateway."""

    idp: OidcIdp | CognitoIdp
    on_unauthenticated_request: Unauthenticated = "authenticate"
    scopes: tuple[str, ...] = ("openid",)
    session_timeout_seconds: int = MAX_SESSION_SECONDS

    def __post_init__(self) -> None:
        if not self.scopes or any(not s or any(c.isspace() for c in s) for s in self.scopes):
            raise ValueError(f"scopes must be words without spaces, got {self.scopes!r}")
        if not 1 <= self.session_timeout_seconds <= MAX_SESSION_SECONDS:
            raise ValueError(f"the ALB's session lasts 1 to {MAX_SESSION_SECONDS} seconds")

    @property
    def type(self) -> Literal["oidc", "cognito"]:
        return "oidc" if isinstance(self.idp, OidcIdp) else "cognito"


def ingress_annotations(auth: AlbAuth) -> dict[str, str]:
    """The Ingress annotations of the authenticate action (every setting explicit, defaults included)."""
    idp = auth.idp
    if isinstance(idp, OidcIdp):
        config = {
            "issuer": idp.issuer,
            "authorizationEndpoint": idp.authorization_endpoint,
            "tokenEndpoint": idp.token_endpoint,
            "userInfoEndpoint": idp.user_info_endpoint,
            "secretName": CLIENT_SECRET_NAME,
        }
    else:
        config = {
            "userPoolARN": idp.user_pool_arn,
            "userPoolClientID": idp.user_pool_client_id,
            "userPoolDomain": idp.user_pool_domain,
        }
    return {
        AUTH_TYPE: auth.type,
        IDP_OIDC if auth.type == "oidc" else IDP_COGNITO: json.dumps(config, sort_keys=True),
        ON_UNAUTHENTICATED: auth.on_unauthenticated_request,
        SCOPE: " ".join(auth.scopes),
        SESSION_TIMEOUT: str(auth.session_timeout_seconds),
    }


def manifests(auth: AlbAuth, namespace: str) -> list[Manifest]:
    """With OIDC: the client Secret in the Ingress's `namespace`, and the Role and RoleBinding that let the load
    balancer controller read it. Cognito needs none (the controller asks Cognito for the client's secret)."""
    idp = auth.idp
    if not isinstance(idp, OidcIdp):
        return []
    secret: Manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": CLIENT_SECRET_NAME, "namespace": namespace},
        "type": "Opaque",
        "stringData": {CLIENT_ID_KEY: idp.client_id, CLIENT_SECRET_KEY: CLIENT_SECRET_PLACEHOLDER},
    }
    role: Manifest = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": READER, "namespace": namespace},
        # list and watch by name: the controller watches the Secret with a field selector on its name
        # (pkg/k8s/secrets_manager.go), which RBAC checks against resourceNames.
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": [CLIENT_SECRET_NAME],
                "verbs": ["get", "list", "watch"],
            }
        ],
    }
    binding: Manifest = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": READER, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": READER},
        "subjects": [{"kind": "ServiceAccount", "name": CONTROLLER_ACCOUNT, "namespace": CONTROLLER_NAMESPACE}],
    }
    return [secret, role, binding]
