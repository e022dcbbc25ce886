"""Shared fixtures: the dev and prod stacks run once each under the package's mocks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import pytest

from components.tools.preview import mocks, read_project_name, read_stack_config, run_preview
from components.tools.preview.inventory import Inventory
from components.stack import program

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
PROJECT = read_project_name(REPO)
#: The pinned Kubeflow tree, as shared test data beside the repository (real runs fetch it into the user's cache).
KUBEFLOW_TREE = REPO.parent / "shared" / "reference" / "kubeflow" / "26.03.1"


@pytest.fixture(scope="session", autouse=True)
def kubeflow_tree_in_a_fresh_cache(tmp_path_factory):
    """The reference tree installed (digest-checked) into a cache of this session's own, found as a real run finds
    the fetched tree; renders are cached there too, so the session renders each entry once."""
    from components.kubeflow.fetch import install_from

    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    install_from(KUBEFLOW_TREE)
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


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
) -> Inventory:
    """Run the real stack program under mocks with a stack file's config, changed as given; `account` describes
    the AWS account (`caller_arn`, `existing_clusters`, as `mocks.run` takes them)."""
    config = stack_config(stack, overrides, drop)
    return mocks.run(program, project=PROJECT, stack=stack, region=config["aws:region"], config=config, **account)


@pytest.fixture(scope="session")
def dev() -> Inventory:
    return run_preview(REPO, "dev")


@pytest.fixture(scope="session")
def prod() -> Inventory:
    return run_preview(REPO, "prod")


@pytest.fixture
def no_aws_credentials(monkeypatch, tmp_path):
    """An environment in which boto3 finds no credentials at all: no keys, profile, container or web identity,
    no shared files, no instance metadata."""
    for key in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
