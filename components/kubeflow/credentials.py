"""Replace every credential upstream ships as a default with values the platform generates.

Upstream's defaults are public: the Dex user `user@example.com` with password 12341234, the OIDC client secret
shared by Dex and oauth2-proxy, oauth2-proxy's cookie secret, SeaweedFS's minio/minio123, KFP's MySQL root with an
empty password, and the Katib and Hub database passwords. `apply` writes the values of a `Credentials` instead.

A `Credentials` holds plain strings. In a Pulumi program they stay placeholders (the defaults, see `placeholder`)
and the registration swaps each for its generated secret Output, so the manifests stay plain data and the
secrets never pass through them; tests give real strings.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from .objects import Manifest, containers, pod_template
from .transform import replace

_PLACEHOLDER = "<<kubeflow-secret:{}>>"
#: Dex's OIDC client for oauth2-proxy; an identifier, not a secret.
OIDC_CLIENT_ID = "kubeflow-oidc-authservice"


def placeholder(name: str) -> str:
    """The stand-in for the generated secret `name` (a field of Credentials) until registration."""
    return _PLACEHOLDER.format(name)


def _slot(name: str) -> Any:
    return field(default=placeholder(name))


@dataclass(frozen=True)
class Credentials:
    """The secrets upstream ships defaults for; each defaults to its placeholder.

    What the integrator generates (pulumi-random), by field:
    - admin_password_bcrypt: the `bcrypt_hash` of a RandomPassword (the admin's Dex password; the clear text is
      the stack's secret output);
    - oidc_client_secret: one RandomPassword, shared by Dex and oauth2-proxy (they must agree);
    - oauth2_proxy_cookie_secret: exactly 32 characters (oauth2-proxy accepts 16, 24 or 32 byte keys), no specials;
    - pipelines_s3_access_key / pipelines_s3_secret_key: SeaweedFS's S3 identity, alphanumeric;
    - pipelines_mysql_password, katib_mysql_password, hub_catalog_db_password, hub_registry_db_password: database
      passwords, alphanumeric (they end up in connection strings).
    """

    admin_password_bcrypt: str = _slot("admin_password_bcrypt")
    oidc_client_secret: str = _slot("oidc_client_secret")
    oauth2_proxy_cookie_secret: str = _slot("oauth2_proxy_cookie_secret")
    pipelines_s3_access_key: str = _slot("pipelines_s3_access_key")
    pipelines_s3_secret_key: str = _slot("pipelines_s3_secret_key")
    pipelines_mysql_password: str = _slot("pipelines_mysql_password")
    katib_mysql_password: str = _slot("katib_mysql_password")
    hub_catalog_db_password: str = _slot("hub_catalog_db_password")
    hub_registry_db_password: str = _slot("hub_registry_db_password")


#: Every credential's name, as `placeholder` and the registration's `secrets` mapping spell it.
NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Credentials))


@dataclass(frozen=True)
class Admin:
    """The one Dex static user: the platform administrator who adds teams."""

    email: str
    username: str = "admin"


def _string_data(values: dict[str, str]) -> Callable[[Manifest], Manifest]:
    """Set a Secret's content as stringData (plain values or placeholders), dropping upstream's base64 data."""

    def change(obj: Manifest) -> Manifest:
        obj.pop("data", None)
        obj["stringData"] = dict(values)
        return obj

    return change


def _dex_config(admin: Admin) -> Callable[[Manifest], Manifest]:
    def change(obj: Manifest) -> Manifest:
        config = yaml.safe_load(obj["data"]["config.yaml"])
        config["staticPasswords"] = [
            {
                "email": admin.email,
                "hashFromEnv": "DEX_USER_PASSWORD",
                "username": admin.username,
                # Dex keys a static user's identity by userID: derive it from the email, so it is stable.
                "userID": str(uuid.uuid5(uuid.NAMESPACE_URL, f"mailto:{admin.email}")),
            }
        ]
        obj["data"]["config.yaml"] = yaml.safe_dump(config, sort_keys=False)
        return obj

    return change


def _mysql_root_password(secret: str, secret_key: str) -> Callable[[Manifest], Manifest]:
    """MySQL root with the password of a Secret, never MYSQL_ALLOW_EMPTY_PASSWORD (KFP's MySQL ships with only
    that; Katib's with both). Read only when the data directory is first initialised: it applies to new installs."""

    def change(obj: Manifest) -> Manifest:
        spec = pod_template(obj)["spec"]  # type: ignore[index]
        for container in containers(spec):
            drop = {"MYSQL_ALLOW_EMPTY_PASSWORD", "MYSQL_ROOT_PASSWORD"}
            env = [e for e in container.get("env") or () if e["name"] not in drop]
            env.insert(
                0, {"name": "MYSQL_ROOT_PASSWORD", "valueFrom": {"secretKeyRef": {"name": secret, "key": secret_key}}}
            )
            container["env"] = env
        return obj

    return change


def apply(objects: list[Manifest], credentials: Credentials, admin: Admin) -> list[Manifest]:
    """Write the given credentials (and the admin user) wherever upstream has a default. Objects of components
    not installed are simply absent; every default of those present is replaced."""
    present = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects}
    oauth2 = {
        "client-id": OIDC_CLIENT_ID,
        "client-secret": credentials.oidc_client_secret,
        "cookie-secret": credentials.oauth2_proxy_cookie_secret,
    }
    changes = {
        ("Secret", "auth", "dex-passwords"): _string_data({"DEX_USER_PASSWORD": credentials.admin_password_bcrypt}),
        ("Secret", "auth", "dex-oidc-client"): _string_data(
            {"OIDC_CLIENT_ID": OIDC_CLIENT_ID, "OIDC_CLIENT_SECRET": credentials.oidc_client_secret}
        ),
        ("ConfigMap", "auth", "dex"): _dex_config(admin),
        ("Secret", "oauth2-proxy", "oauth2-proxy"): _string_data(oauth2),
        ("Secret", "kubeflow", "mlpipeline-minio-artifact"): _string_data(
            {"accesskey": credentials.pipelines_s3_access_key, "secretkey": credentials.pipelines_s3_secret_key}
        ),
        ("Secret", "kubeflow", "mysql-secret"): _string_data(
            {"username": "root", "password": credentials.pipelines_mysql_password}
        ),
        ("Deployment", "kubeflow", "mysql"): _mysql_root_password("mysql-secret", "password"),
        ("Deployment", "kubeflow", "katib-mysql"): _mysql_root_password("katib-mysql-secrets", "MYSQL_ROOT_PASSWORD"),
        ("Secret", "kubeflow", "katib-mysql-secrets"): _string_data(
            {"MYSQL_ROOT_PASSWORD": credentials.katib_mysql_password}
        ),
        ("Secret", "kubeflow", "model-catalog-postgres"): _string_data(
            {"POSTGRES_USER": "postgres", "POSTGRES_PASSWORD": credentials.hub_catalog_db_password}
        ),
    }
    for obj in objects:
        if obj["kind"] == "Secret" and obj["metadata"]["name"] == "model-registry-db-secrets":
            namespace = obj["metadata"]["namespace"]
            changes[("Secret", namespace, "model-registry-db-secrets")] = _string_data(
                {"POSTGRES_USER": "root", "POSTGRES_PASSWORD": credentials.hub_registry_db_password}
            )
    return replace(objects, {ident: change for ident, change in changes.items() if ident in present})


#: Upstream's public default values (secrets decoded), as shipped in 26.03.1.
UPSTREAM_DEFAULTS = frozenset(
    {
        "$2y$12$4K/VkmDd1q1Orb3xAt82zu8gk7Ad6ReFR4LCP9UeYE90NLiN9Df72",  # bcrypt of 12341234
        "pUBnBOY80SnXgjibTYM9ZWNzY2xreNGQok",  # the OIDC client secret
        "7d16fee92f8d11b8940b081b3f8b8acb",  # oauth2-proxy's cookie secret
        "minio123",
        "test",  # Katib's MySQL root, the model registry's database
    }
)
_DEFAULT_EMAIL = "user@example.com"


def secret_values(obj: Manifest) -> Iterable[tuple[str, str]]:
    """(key, value) of a Secret's content, base64 data decoded."""
    for name, value in (obj.get("stringData") or {}).items():
        yield name, value
    for name, value in (obj.get("data") or {}).items():
        yield name, base64.b64decode(value).decode(errors="replace")


def defaults_left(objects: Iterable[Manifest]) -> list[str]:
    """Every upstream default credential still present (empty: none)."""
    found = []
    for obj in objects:
        where = f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
        if obj["kind"] == "Secret":
            for name, value in secret_values(obj):
                if value in UPSTREAM_DEFAULTS:
                    found.append(f"{where}: {name} is upstream's default")
                if name in {"password", "MYSQL_ROOT_PASSWORD", "POSTGRES_PASSWORD"} and value in {"", "postgres"}:
                    found.append(f"{where}: {name} is upstream's default")
        text = json.dumps(obj)
        if _DEFAULT_EMAIL in text:
            found.append(f"{where}: names {_DEFAULT_EMAIL}")
        if any(default in text for default in UPSTREAM_DEFAULTS - {"test"}):
            found.append(f"{where}: holds an upstream default credential")
        if '"MYSQL_ALLOW_EMPTY_PASSWORD"' in text:
            found.append(f"{where}: allows an empty MySQL root password")
    return sorted(set(found))
