"""Shared fixtures, and the markers that keep the pure tests fast.

A test is pure unless it is marked: config parsing, renderers, IAM documents and the boto3 code against moto run in
well under a second each. What takes seconds carries one of these markers, each of which implies `slow`, the one
`make test-fast` (`pytest -m "not slow"`) leaves out:

- `stack`: runs a Pulumi program under the mocks: a stack preview (the `dev` and `prod` fixtures, `run_stack`), a
  team stack, or a component on its own;
- `subprocess`: starts a process (the preview's command line, refcheck, a fresh interpreter);
- `refcheck`: checks objects with ../shared/tools/refcheck (skipped when it is not beside the repository);
- `render`: renders the Kubeflow manifests with the pinned kustomize.

A fixture named in FIXTURE_MARKERS marks every test that uses it; modules that preview throughout set `pytestmark`.
SlowWorkGuard fails a test that runs a Pulumi program or starts a process without its marker, so the fast target
cannot grow slow unnoticed.

Nothing here imports the stack program or the preview at load (they pull in every provider SDK, seconds a pure test
must not pay): `offline_preview()` imports them on first use.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pulumi.runtime
import pytest
import yaml

from tests.once_per_run import Previewed, once_per_run, preview_once, run_folder

if TYPE_CHECKING:
    from components.tools.preview.inventory import Inventory

#: tests/test_markers.py runs sessions of its own to check the markers.
pytest_plugins = ("pytester",)

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
PROJECT: str = yaml.safe_load((REPO / "Pulumi.yaml").read_text())["name"]
#: The pinned Kubeflow tree, as shared test data beside the repository (real runs fetch it into the user's cache).
KUBEFLOW_TREE = REPO.parent / "shared" / "reference" / "kubeflow" / "26.03.1"
REFCHECK = REPO.parent / "shared" / "tools" / "refcheck" / "refcheck.py"

#: The markers for slow work, each implying `slow` (registered, with their meaning, in pyproject.toml).
SLOW_MARKERS = ("stack", "subprocess", "refcheck", "render", "engine")
#: Fixtures whose use makes a test slow, and the marker it gets for them.
FIXTURE_MARKERS = {
    "dev": "stack",
    "prod": "stack",
    "dev_preview": "stack",
    "prod_preview": "stack",
    "stack_once": "stack",
    "render_cache": "render",
}


def offline_preview() -> SimpleNamespace:
    """The names the tests' shared helpers take from the offline preview and the stack program, imported here only."""
    from components.platform.entry import program
    from components.tools.preview import mocks, read_stack_config, run_preview
    from components.tools.stack_files import with_unset_secrets

    return SimpleNamespace(
        mocks=mocks,
        read_stack_config=read_stack_config,
        run_preview=run_preview,
        program=program,
        with_unset_secrets=with_unset_secrets,
    )


# ----------------------------------------------------------------------------------------------------- markers


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, marker in FIXTURE_MARKERS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)
        if any(item.get_closest_marker(marker) for marker in SLOW_MARKERS):
            item.add_marker("slow")
        if item.get_closest_marker("refcheck") and not REFCHECK.exists():
            item.add_marker(pytest.mark.skip(reason="../shared/tools/refcheck is not beside the repository"))


class SlowWorkGuard:
    """While one test runs (its fixtures included), notes a Pulumi program run under the mocks without `stack`, and a
    process started without `subprocess` (a kustomize render: `render` or `stack`). The work still runs, since the
    code under test may catch what is raised inside it; the test fails at teardown instead."""

    def __init__(self, item: pytest.Item) -> None:
        self.markers = {marker.name for marker in item.iter_markers()}
        self.unmarked: list[str] = []
        self.set_mocks, self.popen = pulumi.runtime.set_mocks, subprocess.Popen

    def install(self) -> None:
        guard = self

        def set_mocks(*args: Any, **kwargs: Any) -> None:
            guard.check("stack", "runs a Pulumi program under the mocks")
            guard.set_mocks(*args, **kwargs)

        # the class found at install time (mypy takes no base class from an attribute)
        class Popen(self.popen):  # type: ignore[name-defined]
            def __init__(self, args: Any, *more: Any, **options: Any) -> None:
                command = [args] if isinstance(args, str | os.PathLike) else list(args)
                if command[1:2] == ["kustomize"]:
                    guard.check("render", "renders Kubeflow with kustomize", also=("stack",))
                elif Path(str(command[0])).name == "fc-list":
                    # matplotlib lists the system's fonts once per font cache, when the first figure of a preview's
                    # report is drawn (the session's cache is new): part of a preview, which `stack` marks
                    guard.check("stack", "draws the preview's report", also=("subprocess",))
                else:
                    guard.check("subprocess", f"starts a process ({' '.join(map(str, command))[:100]})")
                super().__init__(args, *more, **options)

        # deliberately replaces the class for the test's duration, which mypy refuses for a class
        pulumi.runtime.set_mocks, subprocess.Popen = set_mocks, Popen  # type: ignore[misc]

    def remove(self) -> None:
        pulumi.runtime.set_mocks, subprocess.Popen = self.set_mocks, self.popen  # type: ignore[misc]  # as above

    def check(self, marker: str, what: str, also: tuple[str, ...] = ()) -> None:
        if not self.markers & {marker, *also}:
            self.unmarked.append(f"{what}: mark it @pytest.mark.{marker}")


GUARD = pytest.StashKey[SlowWorkGuard]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    guard = item.stash[GUARD] = SlowWorkGuard(item)  # before the first fixture, module and session ones included
    guard.install()
    return (yield)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    guard = item.stash.get(GUARD, None)
    try:
        result = yield
    finally:
        if guard is not None:
            guard.remove()
    if guard is not None and guard.unmarked:
        pytest.fail(f"{item.nodeid}: " + "; ".join(sorted(set(guard.unmarked))), pytrace=False)
    return result


# -------------------------------------------------------------------------------------------- Kubeflow tree


@pytest.fixture(scope="session", autouse=True)
def fresh_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache of this session's own (of this worker's, under xdist) in place of the user's: the Kubeflow tree and
    its renders are found there as a real run finds them, and nothing a test caches outlives the session. Kubeflow's
    renders are shared by the run's workers: each is keyed by everything that decides it and written whole then
    renamed, so a worker reads another's or writes its own, never half of one."""
    from components.kubeflow.render import default_render_cache

    cache = tmp_path_factory.mktemp("cache")
    shared_renders = run_folder(tmp_path_factory) / "kubeflow-renders"
    shared_renders.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(cache))
        default_render_cache().parent.mkdir(parents=True)
        default_render_cache().symlink_to(shared_renders, target_is_directory=True)
        yield cache


@pytest.fixture(scope="session")
def kubeflow_tree(fresh_cache: Path) -> None:
    """The reference tree installed (digest-checked) into the session's cache; renders are cached there too, so the
    session renders each entry once."""
    from components.kubeflow.fetch import install_from

    install_from(KUBEFLOW_TREE)


@pytest.fixture(scope="session")
def render_cache(fresh_cache: Path) -> Path:
    """The session's Kubeflow render cache, the one previews read too: each entry is rendered once per session."""
    from components.kubeflow.render import default_render_cache

    return default_render_cache()


@pytest.fixture(autouse=True)
def _kubeflow_tree_for_previews(request: pytest.FixtureRequest) -> None:
    # A preview renders Kubeflow from the installed tree; a pure test neither needs it nor waits for its install.
    if request.node.get_closest_marker("stack"):
        request.getfixturevalue("kubeflow_tree")


# ----------------------------------------------------------------------------------------------------- AWS


@pytest.fixture(scope="session", autouse=True)
def quick_moto() -> Iterator[None]:
    """moto without its two costs no test needs, each about a second per test: every `mock_aws()` gives boto3 a
    fresh default session, which would parse AWS's service models again (all sessions share one loader here), and
    its EC2 would create a catalogue of ~1,300 public images with their snapshots (no test lists images)."""
    session = sys.modules.get("botocore.session")  # imported at collection by the modules that use boto3
    with pytest.MonkeyPatch.context() as patch:
        if session is not None:
            patch.setattr(session, "create_loader", functools.cache(session.create_loader))
        patch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
        yield


# ------------------------------------------------------------------------------------------------ previews


def stack_config(stack: str, overrides: Mapping[str, Any] | None = None, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """The raw config of a stack file with some keys replaced (objects given as dicts) or dropped."""
    config, _ = offline_preview().read_stack_config(REPO, PROJECT, stack)
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
    # A client secret the config names is set as the stack file would leave it: unset, so the preview's stand-in.
    config, secret_keys = offline_preview().with_unset_secrets(stack_config(stack, overrides, drop), [])
    preview = offline_preview()
    return preview.mocks.run(
        preview.program,
        project=PROJECT,
        stack=stack,
        region=config["aws:region"],
        config=config,
        secret_keys=secret_keys,
        **account,
    )


# The shipped stacks run once in the whole run, not once per xdist worker (tests/once_per_run.py): the tests that
# read them only read them.


@pytest.fixture(scope="session")
def dev(kubeflow_tree: None, tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    return once_per_run(tmp_path_factory, "dev", lambda: offline_preview().run_preview(REPO, "dev"))


@pytest.fixture(scope="session")
def prod(kubeflow_tree: None, tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    return once_per_run(tmp_path_factory, "prod", lambda: offline_preview().run_preview(REPO, "prod"))


@pytest.fixture(scope="session")
def stack_once(
    kubeflow_tree: None, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str, Mapping[str, Any]], Inventory]:
    """run_stack for a stack changed as several modules change it alike (prod under `statefulResources: destroy`),
    run once in the whole run: the inventory is only to be read."""

    def run(stack: str, overrides: Mapping[str, Any]) -> Inventory:
        key = hashlib.sha256(json.dumps([stack, overrides], sort_keys=True).encode()).hexdigest()[:16]
        return once_per_run(tmp_path_factory, f"{stack}-{key}", lambda: run_stack(stack, overrides))

    return run


@pytest.fixture(scope="session")
def dev_preview(kubeflow_tree: None, tmp_path_factory: pytest.TempPathFactory) -> Previewed:
    """The offline preview's command run on the dev stack: its folder (to be read only), printout and status."""
    return preview_once(tmp_path_factory, REPO, "dev")


@pytest.fixture(scope="session")
def prod_preview(kubeflow_tree: None, tmp_path_factory: pytest.TempPathFactory) -> Previewed:
    """As dev_preview, for the prod stack."""
    return preview_once(tmp_path_factory, REPO, "prod")


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
