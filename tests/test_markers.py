"""The fast target stays fast: what makes a test slow marks it `slow` (so `-m "not slow"` leaves it out), and a test
that runs a Pulumi program or starts a process without its marker fails, however it got there."""

from __future__ import annotations

import tomllib

import pytest

from tests.conftest import FIXTURE_MARKERS, REPO, SLOW_MARKERS, offline_preview

pytestmark = [pytest.mark.stack, pytest.mark.subprocess]  # the inner session's tests preview and start processes

CONFTEST = """
import pytest

from tests.conftest import pytest_collection_modifyitems, pytest_runtest_setup, pytest_runtest_teardown


@pytest.fixture
def dev():
    return None
"""

TESTS = """
import subprocess
import sys

import pytest

from tests.conftest import offline_preview


def preview():
    offline_preview().mocks.run(lambda: None, project="p", stack="s", region="us-west-2", config={})


def start_a_process():
    subprocess.run([sys.executable, "-c", ""], check=True)


@pytest.fixture(scope="module")
def previewed_once():
    preview()


def test_pure():
    pass


def testoffline_previews_unmarked():
    preview()


def testoffline_previews_unmarked_in_a_module_fixture(previewed_once):
    pass


def test_starts_a_process_unmarked():
    start_a_process()


@pytest.mark.stack
def testoffline_previews_marked():
    preview()


@pytest.mark.subprocess
def test_starts_a_process_marked():
    start_a_process()


def test_uses_aoffline_preview_fixture(dev):
    preview()
"""

UNMARKED = [
    "*testoffline_previews_unmarked: runs a Pulumi program under the mocks: mark it @pytest.mark.stack",
    (
        "*testoffline_previews_unmarked_in_a_module_fixture: runs a Pulumi program under the mocks: "
        "mark it @pytest.mark.stack"
    ),
    "*test_starts_a_process_unmarked: starts a process (*): mark it @pytest.mark.subprocess",
]


@pytest.fixture(scope="module")
def preview_loaded() -> None:
    # Before the inner sessions, which forget the modules they import: a provider SDK registers only once a process.
    offline_preview()


@pytest.fixture
def inner(preview_loaded: None, pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyprojecttoml((REPO / "pyproject.toml").read_text())
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_inner=TESTS)
    return pytester


def test_unmarked_slow_work_fails_at_teardown_and_marked_work_passes(inner):
    result = inner.runpytest_inprocess("test_inner.py")
    result.assert_outcomes(passed=7, errors=3)
    result.stdout.fnmatch_lines_random(UNMARKED)


def test_the_fast_selection_leaves_out_every_marked_test_and_still_catches_the_unmarked(inner):
    result = inner.runpytest_inprocess("-m", "not slow", "test_inner.py")
    result.assert_outcomes(passed=4, errors=3, deselected=3)
    result.stdout.fnmatch_lines_random(UNMARKED)


def test_every_slow_marker_is_registered_and_says_what_it_marks():
    registered = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    names = [line.split(":")[0] for line in registered]
    assert names == ["slow", *SLOW_MARKERS]
    assert set(FIXTURE_MARKERS.values()) <= set(SLOW_MARKERS)
