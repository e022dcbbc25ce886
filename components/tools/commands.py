"""What the package's commands share: how they name the stack they act on, how they read it, and their output formats.

Every command takes `--stack` and `--project-dir` alike, and reports a stack it cannot read alike: the missing file,
or every problem of the stack's config at once, under the stack's name, with exit status INVALID_STACK.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, overload

from ..config.errors import ConfigError
from ..platform.config import PlatformConfig
from .stack_files import load_stack

#: The exit status of a command whose stack file is missing or whose config is invalid.
INVALID_STACK = 2

T = TypeVar("T")


def add_stack_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stack", required=True, help="stack name; reads Pulumi.<stack>.yaml")
    parser.add_argument("--project-dir", type=Path, default=Path.cwd(), help="folder with Pulumi.yaml (default: .)")


def add_format_arguments(parser: argparse.ArgumentParser, subject: str) -> None:
    """`--json` or `--markdown` (at most one; neither: a text table), for a command that prints `subject`."""
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help=f"print {subject} as JSON")
    output.add_argument("--markdown", action="store_true", help=f"print {subject} as a Markdown table")


def stack_config(project_dir: Path, stack: str) -> PlatformConfig:
    """The stack file's parsed config. Raises ConfigError on bad config, FileNotFoundError without the files."""
    return load_stack(project_dir, stack)[0]


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr)


@overload
def read_stack(args: argparse.Namespace, *, report: Callable[[str], None] = ...) -> PlatformConfig | None: ...
@overload
def read_stack(
    args: argparse.Namespace, read: Callable[[Path, str], T], *, report: Callable[[str], None] = ...
) -> T | None: ...
def read_stack(
    args: argparse.Namespace,
    read: Callable[[Path, str], Any] = stack_config,
    *,
    report: Callable[[str], None] = _to_stderr,
) -> Any:
    """What `read` (by default: the parsed config) makes of the stack the command line names; None once `report`
    (by default: stderr) is told why that stack cannot be read, and the command should exit with INVALID_STACK."""
    try:
        return read(args.project_dir, args.stack)
    except (ConfigError, FileNotFoundError) as error:
        report(f"Stack '{args.stack}': {error}")
        return None
