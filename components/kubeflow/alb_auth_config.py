"""`kubeflow.access.albAuth`: the ALB authenticates people (OIDC or Cognito) before the gateway sees a request.

eks-ml-platform:kubeflow:
  access:
    mode: alb
    certificateArn: arn:aws:acm:...
    host: kubeflow.corp.example
    albAuth:
      type: oidc
      issuer: https://login.corp.example
      authorizationEndpoint: https://login.corp.example/oauth2/v1/authorize
      tokenEndpoint: https://login.corp.example/oauth2/v1/token
      userInfoEndpoint: https://login.corp.example/oauth2/v1/userinfo
      clientId: 0oa-kubeflow-alb
      clientSecretKey: kubeflowAlbClientSecret   # pulumi config set --secret kubeflowAlbClientSecret ...
    # or:  albAuth: {type: cognito, userPoolArn: arn:aws:cognito-idp:..., userPoolClientId: ..., userPoolDomain: ...}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, model_validator
from pydantic.alias_generators import to_camel

from ..config.validation import FieldProblems, matches
from .alb_auth import MAX_SESSION_SECONDS, AlbAuth, CognitoIdp, OidcIdp, Unauthenticated
from .auth_config import ConfigKey, HttpsUrl

#: arn:<partition>:cognito-idp:<region>:<account>:userpool/<region>_<id> (Amazon Cognito's UserPoolId pattern).
UserPoolArn = Annotated[
    StrictStr,
    matches(
        r"arn:aws(-cn|-us-gov)?:cognito-idp:[a-z]{2}(-[a-z]+)+-\d:\d{12}:userpool/[a-z]{2}(-[a-z]+)+-\d_[0-9A-Za-z]+",
        "a Cognito user pool ARN like 'arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_AbC123'",
    ),
]
#: Cognito's ClientId pattern ([\w+]+, up to 128 characters).
UserPoolClientId = Annotated[
    StrictStr, matches(r"[\w+]{1,128}", "a Cognito app client ID (letters, digits, '_' and '+')")
]
#: The prefix of a Cognito domain (`<prefix>.auth.<region>.amazoncognito.com`), or a custom domain's full name.
UserPoolDomain = Annotated[
    StrictStr,
    matches(
        r"(?!.*\.amazoncognito\.com$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*",
        "the Cognito domain's prefix ('my-domain', not https://my-domain.auth.<region>.amazoncognito.com) or a "
        "custom domain like 'auth.corp.example'",
    ),
]
ClientId = Annotated[StrictStr, matches(r"\S+", "the client ID registered with the identity provider (no spaces)")]
Scope = Annotated[StrictStr, matches(r"\S+", "one scope without spaces, like 'openid'")]

_OIDC = ("issuer", "authorization_endpoint", "token_endpoint", "user_info_endpoint", "client_id", "client_secret_key")
_COGNITO = ("user_pool_arn", "user_pool_client_id", "user_pool_domain")


class AlbAuthConfig(BaseModel):
    """The ALB's authenticate action on its HTTPS listener (the load balancer controller's `auth-*` annotations)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    type: Literal["oidc", "cognito"] = Field(
        description="`oidc`: any OpenID Connect provider (the keys issuer to clientSecretKey); `cognito`: a Cognito "
        "user pool (the userPool keys); the keys of the other type are refused"
    )
    issuer: HttpsUrl | None = Field(default=None, description="oidc: the provider's issuer URL")
    authorization_endpoint: HttpsUrl | None = Field(
        default=None, description="oidc: the provider's authorization endpoint (its discovery document's)"
    )
    token_endpoint: HttpsUrl | None = Field(
        default=None,
        description="oidc: the provider's token endpoint; the ALB calls it, so it must resolve in public DNS and be "
        "reachable from the ALB's subnets on 443",
    )
    user_info_endpoint: HttpsUrl | None = Field(
        default=None, description="oidc: the provider's user info endpoint (the ALB calls it too)"
    )
    client_id: ClientId | None = Field(default=None, description="oidc: the client ID registered for the ALB")
    client_secret_key: ConfigKey | None = Field(
        default=None,
        description="oidc: the key of this project's config holding the client secret, set with `pulumi config set "
        "--secret <key> <secret>` (a plain value is refused); it reaches the ALB through a Secret in istio-system "
        "that only the load balancer controller may read",
    )
    user_pool_arn: UserPoolArn | None = Field(default=None, description="cognito: the user pool's ARN")
    user_pool_client_id: UserPoolClientId | None = Field(
        default=None, description="cognito: the app client's ID (a client with a secret and the code grant)"
    )
    user_pool_domain: UserPoolDomain | None = Field(
        default=None, description="cognito: the user pool domain's prefix, or its custom domain"
    )
    on_unauthenticated_request: Unauthenticated = Field(
        default="authenticate",
        description="what the ALB does with a request without its session: `authenticate` (send the browser to the "
        "provider), `deny` (401, for APIs) or `allow` (forward it unauthenticated)",
    )
    scopes: tuple[Scope, ...] = Field(
        default=("openid",),
        min_length=1,
        description="the scopes the ALB asks for; with oidc they include `openid`",
    )
    session_timeout_seconds: StrictInt = Field(
        default=MAX_SESSION_SECONDS,
        ge=1,
        le=MAX_SESSION_SECONDS,
        description="how long the ALB's session lasts, in seconds (at most 7 days)",
    )

    @model_validator(mode="after")
    def _keys_of_its_type(self) -> AlbAuthConfig:
        own, other = (_OIDC, _COGNITO) if self.type == "oidc" else (_COGNITO, _OIDC)
        other_type = "cognito" if self.type == "oidc" else "oidc"
        problems = [(to_camel(f), f"is required with type {self.type}") for f in own if getattr(self, f) is None]
        problems += [
            (to_camel(f), f"is a key of type {other_type}, not of type {self.type}; remove it (one type at a time)")
            for f in other
            if f in self.model_fields_set
        ]
        if self.type == "oidc" and "openid" not in self.scopes:
            problems.append(("scopes", "must include 'openid' with type oidc (OpenID Connect requests carry it)"))
        if problems:
            raise FieldProblems(problems)
        return self

    def spec(self) -> AlbAuth:
        idp: OidcIdp | CognitoIdp
        # The validator above made every key of the type present.
        if self.type == "oidc":
            idp = OidcIdp(
                issuer=str(self.issuer),
                authorization_endpoint=str(self.authorization_endpoint),
                token_endpoint=str(self.token_endpoint),
                user_info_endpoint=str(self.user_info_endpoint),
                client_id=str(self.client_id),
            )
        else:
            idp = CognitoIdp(str(self.user_pool_arn), str(self.user_pool_client_id), str(self.user_pool_domain))
        return AlbAuth(
            idp=idp,
            on_unauthenticated_request=self.on_unauthenticated_request,
            scopes=self.scopes,
            session_timeout_seconds=self.session_timeout_seconds,
        )
