"""The docs as a user types them: every shell command of README.md and docs/*.md either runs as written (from a copy
of the repository, with the `.venv` the docs name) or is listed here with the reason it cannot run without AWS; every
interpreter call names that `.venv`; every repository file, link and anchor the pages name exists."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PAGES = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))

#: Commands that need the real world or cannot run inside the suite, by how they start, each with its reason. A
#: command the docs show is run unless it starts with one of these.
NOT_RUN = {
    "pulumi ": "needs the Pulumi CLI, a state backend and AWS credentials",
    "aws ": "needs AWS credentials",
    "kubectl ": "needs a running cluster",
    "KUBECONFIG=": "kubectl against a running cluster",
    "make preflight": "reads the stack's AWS account (needs credentials)",
    "make leak-check": "reads the stack's AWS account after a destroy (needs credentials)",
    "make test": "the suite this test belongs to",
    ".venv/bin/python -m components.tools.preflight ": "reads the stack's AWS account (needs credentials)",
    ".venv/bin/python -m components.tools.sweep ": "lists or deletes in the stack's AWS account (needs credentials)",
    ".venv/bin/python -m components.cost --by-team ": "reads the stack's Prometheus (port-forwarded)",
}

#: Commands the docs show that another shown command already runs: the text it prints for them (`make -n`) is
#: checked instead, so the preview is made once.
RUN_BY = {".venv/bin/python -m components.preview --stack dev --out build/preview/dev": "make preview"}

#: Keeps make from reinstalling the virtualenv: the copy's `.venv` is the one this test runs in.
MAKE = "make -o .venv/.installed -o .venv/.installed-dev "


# --------------------------------------------------------------------------------------------- reading the pages


def fenced_blocks(text: str, languages: tuple[str, ...] = ("bash", "sh")) -> list[str]:
    return re.findall(rf"^```(?:{'|'.join(languages)})\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def without_comment(line: str) -> str:
    """The line up to a `#` that starts a shell comment (outside quotes, at the start or after a space)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def commands_of(text: str) -> list[str]:
    """Each command of the page's shell blocks, continuation lines joined, comments dropped."""
    commands = []
    for block in fenced_blocks(text):
        pending = ""
        for line in block.splitlines():
            line = without_comment(line).strip()
            if line.endswith("\\"):
                pending += line[:-1].rstrip() + " "
                continue
            command = (pending + line).strip()
            pending = ""
            if command:
                commands.append(command)
    return commands


def all_commands() -> list[tuple[str, str]]:
    """(page, command) for every command of every page, each command once."""
    seen: dict[str, str] = {}
    for page in PAGES:
        for command in commands_of(page.read_text()):
            seen.setdefault(command, page.relative_to(REPO).as_posix())
    return [(page, command) for command, page in seen.items()]


def reason_not_run(command: str) -> str | None:
    return next((reason for start, reason in NOT_RUN.items() if command.startswith(start)), None)


def prose(text: str) -> str:
    """The page without its fenced blocks."""
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def code_spans(text: str) -> list[str]:
    """Inline code of the page, outside fenced blocks."""
    return re.findall(r"`([^`\n]+)`", prose(text))


def repository_files() -> list[str]:
    """The repository's files as a fresh clone would have them, plus those not committed yet (nothing ignored)."""
    return subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],  # noqa: S607 - git from PATH, as a developer runs it
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()


# ------------------------------------------------------------------------------------------------- pure checks


def test_the_extractor_reads_blocks_as_a_shell_would():
    text = "```bash\nmake a   # why\nx --f 'a # b' \\\n  --g c\n# only a comment\n```\n```yaml\nk: v\n```\n"
    assert commands_of(text) == ["make a", "x --f 'a # b' --g c"]


def test_every_page_shows_commands_and_each_is_run_or_listed_with_a_reason():
    commands = all_commands()
    assert {page for page, _ in commands} >= {"README.md", "docs/teardown.md", "docs/offline-preview.md"}
    unused = [start for start in NOT_RUN if not any(command.startswith(start) for _, command in commands)]
    assert unused == [], "entries of NOT_RUN that no page needs any more"


def test_every_python_the_docs_show_is_the_virtualenvs():
    """Without an activated `.venv`, `python -m components...` fails with ModuleNotFoundError: the docs name the
    interpreter of the virtualenv that `make` creates."""
    bare = re.compile(r"^(?:\S+=\S+ )*(?:python3?|pip3?|pytest)\b")
    found = []
    for page in PAGES:
        text = page.read_text()
        for command in (*commands_of(text), *code_spans(text)):
            if bare.match(command):
                found.append(f"{page.relative_to(REPO)}: {command}")
    assert found == []


def named_paths(text: str) -> set[str]:
    """Repository paths the page names: in inline code and in its commands (also after `name=`), when they start
    with a top-level entry of the repository; placeholders and generated folders (`build/`) are not paths."""
    top = {path.split("/", 1)[0] for path in repository_files()} - {"build"}
    words = [word for span in code_spans(text) for word in span.split()]
    words += [word for command in commands_of(text) for word in shlex.split(command)]
    paths = set()
    for word in words:
        word = word.split("=", 1)[-1].rstrip(".,;:)")
        if re.search(r"[<>*$~{}]", word) or not word:
            continue
        if word.split("/", 1)[0] in top and (word.count("/") or (REPO / word).suffix or word in top):
            paths.add(word)
    return paths


@pytest.mark.subprocess  # git ls-files: what a fresh clone has
def test_every_repository_path_the_docs_name_exists():
    missing = [
        f"{page.relative_to(REPO)}: {path}"
        for page in PAGES
        for path in sorted(named_paths(page.read_text()))
        if not (REPO / path).exists()
    ]
    assert missing == []


def anchors(text: str) -> set[str]:
    """GitHub's anchors of a page: one per heading (lowercase, punctuation dropped, spaces as `-`, repeats
    numbered) and every `<a id>`."""
    found: set[str] = set(re.findall(r'<a id="([^"]+)"', prose(text)))
    counts: dict[str, int] = {}
    for heading in re.findall(r"^#+ (.+)$", prose(text), flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug if slug not in counts else f"{slug}-{counts[slug]}")
        counts[slug] = counts.get(slug, 0) + 1
    return found


def test_every_link_between_the_pages_reaches_a_file_and_heading():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", prose(page.read_text())):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text()):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert broken == []


@pytest.mark.subprocess  # git ls-files
def test_the_link_checks_catch_a_missing_file_and_heading(tmp_path):
    page = tmp_path / "page.md"
    page.write_text('# Title\n\n## The platform\'s outputs: a contract\n\n<a id="kept"></a>\n')
    assert anchors(page.read_text()) == {"title", "the-platforms-outputs-a-contract", "kept"}
    assert named_paths("`components/nothing-here.py` and `build/preview/dev` and `helm/<release>.yaml`") == {
        "components/nothing-here.py"
    }


# ------------------------------------------------------------------------------------------ running the commands


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The repository's files (committed or not, nothing ignored) in a fresh folder, with `.venv` the virtualenv
    this test runs in and, as in the development checkout, `../shared` beside it."""
    root = tmp_path_factory.mktemp("clone")
    tree = root / REPO.name
    for path in repository_files():
        if (REPO / path).is_file():
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / path, tree / path)
    (tree / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    if (REPO.parent / "shared").is_dir():
        (root / "shared").symlink_to(REPO.parent / "shared", target_is_directory=True)
    return tree


def offline_environment() -> dict[str, str]:
    """This environment without AWS credentials: what runs here must need none."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    env.update(AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_EC2_METADATA_DISABLED="true")
    return env


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    if command.startswith("make "):
        command = MAKE + command.removeprefix("make ")
    return subprocess.run(  # noqa: S602 - runs the command the docs show, as written, through a shell
        command,
        shell=True,
        cwd=cwd,
        env=offline_environment(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def failure(command: str, result: subprocess.CompletedProcess[str]) -> str:
    return f"`{command}` exited {result.returncode}:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"


@pytest.mark.subprocess
def test_every_command_the_docs_show_runs_as_written_or_is_listed(clone):
    commands = all_commands()
    # the preview first: later commands read its folder
    commands.sort(key=lambda item: item[1] != "make preview")
    problems = []
    for page, command in commands:
        if (runner := RUN_BY.get(command)) is not None:
            shown = shell(f"make -n {runner.removeprefix('make ')}", clone)
            if command not in shown.stdout:
                problems.append(f"{page}: `{runner}` does not run `{command}`:\n{shown.stdout}")
            continue
        if reason_not_run(command) is None:
            result = shell(command, clone)
            if result.returncode != 0:
                problems.append(f"{page}: {failure(command, result)}")
            continue
        # Not run, but still checked for staleness: a module and the options it is shown with, a make target.
        words = shlex.split(command)
        if words[:2] == [".venv/bin/python", "-m"]:
            result = shell(f".venv/bin/python -m {words[2]} --help", clone)
            options = [word.split("=")[0] for word in words[3:] if word.startswith("--")]
            unknown = [option for option in options if option not in result.stdout]
            if result.returncode != 0 or unknown:
                problems.append(f"{page}: {failure(command, result)}unknown options: {unknown}")
        elif words[0] == "make":
            result = shell(f"make -n {' '.join(words[1:])}", clone)
            if result.returncode != 0:
                problems.append(f"{page}: no such make target: {failure(command, result)}")
    assert problems == [], "\n\n".join(problems)
