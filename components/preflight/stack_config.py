"""Read a stack's typed config the way the program does, for the command-line tools (preflight, cost)."""

from __future__ import annotations

from pathlib import Path

from ..config import PlatformConfig, parse_config
from ..preview import read_project_name, read_stack_config


def load_stack(project_dir: Path, stack: str) -> PlatformConfig:
    """Raises FileNotFoundError for a missing stack file and ConfigError for an invalid one."""
    project = read_project_name(project_dir)
    raw, _ = read_stack_config(project_dir, project, stack)
    return parse_config(raw, project=project, stack=stack)
