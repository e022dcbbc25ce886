"""The secrets a stack's config names: which project keys hold them, and whether the stack holds each as a secret.

A Kubeflow connector's `clientSecretKey` and the Kubeflow ALB's name a key of the project's namespace; the program
reads that key as a secret, never into the config models, and refuses to run while it is missing or in plain text.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ..config.errors import ConfigIssue
from .config import PROJECT_NAMESPACE, PlatformConfig

#: Where the Kubeflow ALB's authentication is configured.
ALB_AUTH_PATH = "kubeflow.access.albAuth"


def named_secret_keys(values: Mapping[str, Any]) -> dict[str, str]:
    """Project config keys the stack's config names as secrets (a Kubeflow connector's `clientSecretKey`, and the
    Kubeflow ALB's), with the key path naming each; read from the raw values, so they are known even when the rest
    fails to validate."""
    kubeflow = values.get("kubeflow")
    auth = kubeflow.get("auth") if isinstance(kubeflow, Mapping) else None
    connectors = auth.get("connectors") if isinstance(auth, Mapping) else None
    named: dict[str, str] = {}
    for name, connector in sorted(connectors.items()) if isinstance(connectors, Mapping) else ():
        key = connector.get("clientSecretKey") if isinstance(connector, Mapping) else None
        if isinstance(key, str) and key:
            named.setdefault(key, f"kubeflow.auth.connectors.{name}.clientSecretKey")
    access = kubeflow.get("access") if isinstance(kubeflow, Mapping) else None
    alb_auth = access.get("albAuth") if isinstance(access, Mapping) else None
    key = alb_auth.get("clientSecretKey") if isinstance(alb_auth, Mapping) else None
    if isinstance(key, str) and key:
        named.setdefault(key, f"{ALB_AUTH_PATH}.clientSecretKey")
    return named


def secret_problems(config: PlatformConfig, raw: Mapping[str, Any], secret_keys: Collection[str]) -> list[ConfigIssue]:
    """Each secret the config names that the stack does not hold, or holds in plain text."""
    issues = []
    named = {
        f"kubeflow.auth.connectors.{name}.clientSecretKey": connector.client_secret_key
        for name, connector in sorted(config.kubeflow.auth.connectors.items())
    }
    alb_auth = config.kubeflow.access.alb_auth
    if alb_auth is not None and alb_auth.client_secret_key is not None:
        named[f"{ALB_AUTH_PATH}.clientSecretKey"] = alb_auth.client_secret_key
    for path, key in named.items():
        full_key = f"{PROJECT_NAMESPACE}:{key}"
        if full_key not in raw:
            issues.append(
                ConfigIssue(path=path, message=f"names {key}, which is not set: `pulumi config set --secret {key} ...`")
            )
        elif full_key not in secret_keys:
            issues.append(
                ConfigIssue(
                    path=path,
                    message=f"names {key}, which is set in plain text: set it again with `pulumi config set --secret "
                    f"{key} ...`",
                )
            )
    return issues
