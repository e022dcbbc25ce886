"""The entry point: what `pulumi up` runs (`__main__.py`) and the offline preview runs alike, so the preview shows
exactly what would be deployed.

Reads the running stack's config and secrets, plans Kubeflow, builds the platform, exports its outputs. A config
error ends the run with the list of problems, never a traceback.
"""

from __future__ import annotations

from typing import Any

import pulumi

from ..config.errors import ConfigError
from ..kubeflow.fetch import TreeError
from ..kubeflow.render import RenderError
from ..kubeflow.staging import Staged
from .build import build_platform
from .config import PROJECT_NAMESPACE, PlatformConfig
from .outputs import export_outputs
from .parse import parse_config
from .part_args import kubeflow_objects
from .secret_keys import secret_problems


def raw_config() -> dict[str, Any]:
    """Every config key of the running stack, as Pulumi hands them to the program."""
    return {**pulumi.runtime.get_config_env(), **pulumi.runtime.config.CONFIG.get()}


def load_config() -> PlatformConfig:
    """The running stack's config, parsed (`ConfigError` with every problem)."""
    return parse_config(raw_config(), project=pulumi.get_project(), stack=pulumi.get_stack())


def connector_secrets(config: PlatformConfig, raw: dict[str, Any]) -> dict[str, pulumi.Output[str]]:
    """The client secret of each Kubeflow connector, from the stack's config (`secret_problems` found none)."""
    return {
        name: pulumi.Output.secret(str(raw[f"{PROJECT_NAMESPACE}:{connector.client_secret_key}"]))
        for name, connector in sorted(config.kubeflow.auth.connectors.items())
    }


def alb_client_secret(config: PlatformConfig, raw: dict[str, Any]) -> pulumi.Output[str] | None:
    """The client secret of the Kubeflow ALB's OIDC action, from the stack's config (`secret_problems` found no
    problem with it); None without one."""
    auth = config.kubeflow.access.alb_auth
    if auth is None or auth.client_secret_key is None:
        return None
    return pulumi.Output.secret(str(raw[f"{PROJECT_NAMESPACE}:{auth.client_secret_key}"]))


def program() -> None:
    """The whole stack. A config error ends the run with the list of problems, never a traceback."""
    try:
        config = load_config()
        raw = raw_config()
        secret_keys = [key for key in raw if pulumi.runtime.is_config_secret(key)]
        if problems := secret_problems(config, raw, secret_keys):
            raise ConfigError(problems)
    except ConfigError as error:
        raise pulumi.RunError(str(error)) from None
    if (warning := config.system_capacity.warning()) is not None:
        pulumi.log.warn(f"cluster.systemNodeGroup: {warning}")
    kubeflow_plan: list[Staged] = []
    if config.kubeflow.enabled:
        try:
            kubeflow_plan = kubeflow_objects(config)
        except (TreeError, RenderError, ValueError) as error:
            raise pulumi.RunError(f"kubeflow: {error}") from None
    export_outputs(
        build_platform(config, kubeflow_plan, connector_secrets(config, raw), alb_client_secret(config, raw))
    )
