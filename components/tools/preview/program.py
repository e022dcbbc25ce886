"""Preview another Pulumi program that uses the package (a team stack): its own `__main__.py` under the same mocks,
with the stacks it references answered from recorded outputs.

    python -m components.preview --project-dir examples/team-stack --stack prod --out build/preview/team-prod \\
        --stack-reference acme/eks-ml-platform/prod=examples/team-stack/platform-outputs.prod.json
"""

from __future__ import annotations

import json
import runpy
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from components.config.errors import ConfigError, ConfigIssue
from components.platform_config import PROJECT_NAMESPACE
from components.tools.preview import mocks
from components.tools.preview.inventory import Inventory


def is_platform(project: str) -> bool:
    return project == PROJECT_NAMESPACE


def read_stack_references(specs: Iterable[str]) -> dict[str, dict[str, Any]]:
    """`org/project/stack=outputs.json` pairs as {stack: outputs}; ValueError naming a malformed one."""
    references = {}
    for spec in specs:
        stack, sep, path = spec.partition("=")
        if not sep or stack.count("/") != 2:
            raise ValueError(f"--stack-reference {spec!r}: expected ORG/PROJECT/STACK=FILE")
        outputs = json.loads(Path(path).read_text())
        if not isinstance(outputs, dict):
            raise ValueError(f"--stack-reference {spec!r}: {path} holds no JSON object of outputs")
        references[stack] = outputs
    return references


def run_program(
    project_dir: Path,
    project: str,
    stack: str,
    config: Mapping[str, str],
    secret_keys: list[str],
    stack_references: Mapping[str, Mapping[str, Any]],
) -> Inventory:
    """Run the project's `__main__.py` (from its folder, as Pulumi does) under mocks. ConfigError when its stack
    file has no `aws:region`; what the program raises (pulumi.RunError for its own config errors) goes through."""
    if "aws:region" not in config:
        raise ConfigError([ConfigIssue(path="aws:region", message="is required (e.g. 'us-west-2')")])
    main = project_dir.resolve() / "__main__.py"
    sys.path.insert(0, str(main.parent))  # its own modules, as the Pulumi language host finds them

    def program() -> None:
        runpy.run_path(str(main), run_name="__main__")

    try:
        return mocks.run(
            program,
            project=project,
            stack=stack,
            region=config["aws:region"],
            config=config,
            secret_keys=secret_keys,
            stack_references=stack_references,
        )
    finally:
        sys.path.remove(str(main.parent))
