"""Shared fixtures: the dev and prod stacks run once each under the package's mocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pytest

from components.preview import mocks, read_project_name, read_stack_config, run_preview
from components.stack import program

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
PROJECT = read_project_name(REPO)


def stack_config(stack: str, overrides: Mapping[str, Any] | None = None, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """The raw config of a stack file with some keys replaced (objects given as dicts) or dropped."""
    config, _ = read_stack_config(REPO, PROJECT, stack)
    for key in drop:
        config.pop(key)
    for key, value in (overrides or {}).items():
        full_key = key if ":" in key else f"{PROJECT}:{key}"
        config[full_key] = value if isinstance(value, str) else json.dumps(value)
    return config


def run_stack(
    stack: str, overrides: Mapping[str, Any] | None = None, drop: tuple[str, ...] = (), **account: Any
) -> mocks.Inventory:
    """Run the real stack program under mocks with a stack file's config, changed as given; `account` describes
    the AWS account (`caller_arn`, `existing_clusters`, as `mocks.run` takes them)."""
    config = stack_config(stack, overrides, drop)
    return mocks.run(program, project=PROJECT, stack=stack, region=config["aws:region"], config=config, **account)


@pytest.fixture(scope="session")
def dev() -> mocks.Inventory:
    return run_preview(REPO, "dev")


@pytest.fixture(scope="session")
def prod() -> mocks.Inventory:
    return run_preview(REPO, "prod")
