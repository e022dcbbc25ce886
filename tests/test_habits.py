"""The habits REVIEWING.md asks for, held: the pre-commit hooks run what `make lint` runs, changelog fragments have
the form a release folds, and the package's version is one the CHANGELOG describes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from .conftest import REPO

KINDS = ("added", "changed", "deprecated", "removed", "fixed", "security")


def lint_commands() -> list[str]:
    """The commands of the Makefile's `lint` recipe, with the virtualenv's interpreter written out."""
    lines = (REPO / "Makefile").read_text().splitlines()
    start = lines.index("lint: $(VENV)/.installed-dev") + 1
    recipe = []
    for line in lines[start:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip().replace("$(PY)", ".venv/bin/python"))
    return recipe


def test_the_pre_commit_hooks_run_exactly_what_make_lint_runs():
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    assert [hook["entry"] for hook in hooks] == lint_commands()
    assert len(lint_commands()) == 3
    # each hook checks the whole tree, as `make lint` does, not only the files of the commit
    assert all(hook["pass_filenames"] is False and hook["language"] == "system" for hook in hooks)


def fragment_problems(folder: Path) -> list[str]:
    """What is wrong with the changelog fragments of a folder: a name without its section, or not one entry."""
    found = []
    for path in sorted(folder.iterdir()):
        if path.name == "README.md":
            continue
        text = path.read_text()
        if not re.fullmatch(rf"[a-z0-9][a-z0-9-]*\.({'|'.join(KINDS)})\.md", path.name):
            found.append(f"{path.name}: not <short-name>.<{'|'.join(KINDS)}>.md")
        elif not text.startswith("- "):
            found.append(f"{path.name}: an entry is one Markdown list item")
        elif re.search(r"^- ", text[2:], re.M):
            found.append(f"{path.name}: one change per fragment")
    return found


def test_every_changelog_fragment_names_its_section_and_holds_one_entry(tmp_path):
    assert fragment_problems(REPO / "changelog.d") == []
    # the check itself, on fragments written wrong and right
    (tmp_path / "README.md").write_text("# not a fragment\n")
    (tmp_path / "faster-preview.changed.md").write_text("- The preview is faster.\n")
    (tmp_path / "faster-preview.improved.md").write_text("- The preview is faster.\n")
    (tmp_path / "two.fixed.md").write_text("- One fix.\n- Another fix.\n")
    (tmp_path / "prose.added.md").write_text("Added a thing.\n")
    assert fragment_problems(tmp_path) == [
        "faster-preview.improved.md: not <short-name>.<added|changed|deprecated|removed|fixed|security>.md",
        "prose.added.md: an entry is one Markdown list item",
        "two.fixed.md: one change per fragment",
    ]


def test_the_packages_version_is_a_release_the_changelog_describes():
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    changelog = (REPO / "CHANGELOG.md").read_text()
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, re.M)
    assert released, "no dated release in CHANGELOG.md"
    assert released[0] == version, f"pyproject.toml says {version}; the newest release in CHANGELOG.md is {released[0]}"


@pytest.mark.subprocess
def test_the_release_the_engine_tier_upgrades_from_is_a_released_commit():
    """engine/upgrade.py names the previous release by tag and commit; the commit must be that release as the
    CHANGELOG dates it (its own pyproject.toml says the tag's version), and the tag, where this clone has it, points
    at that commit."""
    from engine.upgrade import PREVIOUS, git

    shown = git("show", f"{PREVIOUS.commit}:pyproject.toml")
    assert shown.returncode == 0, f"this clone lacks {PREVIOUS.commit} ({PREVIOUS.tag}): {shown.stderr.decode()}"
    version = tomllib.loads(shown.stdout.decode())["project"]["version"]
    assert PREVIOUS.tag == f"v{version}"
    assert re.search(
        rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", (REPO / "CHANGELOG.md").read_text(), re.M
    )
    tagged = git("rev-parse", "--verify", "--quiet", f"{PREVIOUS.tag}^{{commit}}")
    if tagged.returncode == 0:
        assert tagged.stdout.decode().strip() == PREVIOUS.commit
