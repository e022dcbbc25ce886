"""A stack's files as Pulumi hands them to the program: the project's name, the stack file's config (secrets as
placeholders: no tool here holds the key to decrypt them), and the parsed config every tool starts from."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..config.errors import ConfigError, ConfigIssue
from ..config.stack_file import load_stack_file
from ..platform.config import PROJECT_NAMESPACE, PlatformConfig
from ..platform.parse import parse_config
from ..platform.secret_keys import named_secret_keys

#: The placeholder a `secure:` value of the stack file becomes: the preview has no key to decrypt it with.
SECRET_PLACEHOLDER = "preview-secret-placeholder"
#: What a secret the config names (a Kubeflow connector's or ALB's client secret) is, when the stack file does not
#: set it: the preview shows what would be deployed once it is set, and says it is not (`unset_secrets`).
UNSET_SECRET_PLACEHOLDER = "preview-unset-secret-placeholder"


def read_project_name(project_dir: Path) -> str:
    return str(yaml.safe_load((project_dir / "Pulumi.yaml").read_text())["name"])


def read_stack_config(project_dir: Path, project: str, stack: str) -> tuple[dict[str, str], list[str]]:
    """The stack file's config as Pulumi hands it to the program: `namespace:key` -> string (JSON for objects).

    Keys without a namespace belong to the project; `secure:` values become a placeholder and are marked secret.
    """
    path = project_dir / f"Pulumi.{stack}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"no stack file {path.name} in {project_dir}")
    document = load_stack_file(path) or {}
    entries = document.get("config") if isinstance(document, Mapping) else document
    if not isinstance(entries, Mapping | None):
        raise ConfigError([ConfigIssue(path="config", message=f"expected a mapping of config keys in {path.name}")])
    config: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, value in (entries or {}).items():
        full_key = key if ":" in key else f"{project}:{key}"
        if isinstance(value, Mapping) and set(value) == {"secure"}:
            config[full_key] = SECRET_PLACEHOLDER
            secret_keys.append(full_key)
        elif isinstance(value, str):
            config[full_key] = value
        else:
            config[full_key] = json.dumps(_placeholders(value), sort_keys=True)
    return config, secret_keys


def _placeholders(value: Any) -> Any:
    if isinstance(value, Mapping):
        if set(value) == {"secure"}:
            return SECRET_PLACEHOLDER
        return {k: _placeholders(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_placeholders(v) for v in value]
    return value


def with_kubeflow_tree(config: dict[str, str], project: str, tree: Path | None) -> dict[str, str]:
    """The raw config with `kubeflow.tree` set to a verified local tree (when Kubeflow is on and a tree is given),
    as a stack file would set it."""
    key = f"{project}:kubeflow"
    if tree is None or key not in config or config[key][:1] != "{":
        return config
    section = json.loads(config[key])
    if not section.get("enabled"):
        return config
    return {**config, key: json.dumps({**section, "tree": str(tree)}, sort_keys=True)}


def load_stack(
    project_dir: Path, stack: str, *, kubeflow_tree: Path | None = None
) -> tuple[PlatformConfig, dict[str, str], list[str]]:
    """A stack file's parsed config, and its raw config and secret keys as Pulumi hands them to the program
    (`kubeflow_tree`: read Kubeflow from that verified tree, not the fetched one). Raises ConfigError on bad config."""
    project = read_project_name(project_dir)
    config, secret_keys = read_stack_config(project_dir, project, stack)
    config = with_kubeflow_tree(config, project, kubeflow_tree)
    config, secret_keys = with_unset_secrets(config, secret_keys)
    return parse_config(config, project=project, stack=stack), config, secret_keys


def with_unset_secrets(config: dict[str, str], secret_keys: list[str]) -> tuple[dict[str, str], list[str]]:
    """The raw config with every secret the config names but the stack file lacks set to UNSET_SECRET_PLACEHOLDER
    (as a secret): `pulumi up` stops on them, the preview goes on and warns."""
    kubeflow = config.get(f"{PROJECT_NAMESPACE}:kubeflow", "")
    values = {"kubeflow": json.loads(kubeflow)} if kubeflow[:1] == "{" else {}
    added = {
        f"{PROJECT_NAMESPACE}:{key}": UNSET_SECRET_PLACEHOLDER
        for key in named_secret_keys(values)
        if f"{PROJECT_NAMESPACE}:{key}" not in config
    }
    return {**config, **added}, [*secret_keys, *sorted(added)]


def unset_secrets(config: Mapping[str, str]) -> list[str]:
    """The config keys `with_unset_secrets` filled in."""
    return sorted(key.partition(":")[2] for key, value in config.items() if value == UNSET_SECRET_PLACEHOLDER)
