"""Every command names its stack the same way and reports a stack it cannot read the same way: exit status 2, and
on stderr the stack's name with the missing file or every problem of its config."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.tools.cost.__main__ import main as cost
from components.tools.preflight.__main__ import main as preflight
from components.tools.preview.destroy_estimate import main as destroy_estimate
from components.tools.sweep.__main__ import main as sweep

COMMANDS = {"cost": cost, "preflight": preflight, "sweep": sweep, "destroy_estimate": destroy_estimate}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: eks-ml-platform\n")
    (tmp_path / "Pulumi.broken.yaml").write_text(
        "config:\n  aws:region: us-west-2\n  eks-ml-platform:owner: ml-platform\n  eks-ml-platform:netwrk: {}\n"
    )
    return tmp_path


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_missing_stack_file_exits_2_naming_the_stack_and_the_file(command, project, capsys):
    assert COMMANDS[command](["--stack", "nosuchstack", "--project-dir", str(project)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Stack 'nosuchstack': ")
    assert "Pulumi.nosuchstack.yaml" in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_invalid_stack_config_exits_2_with_every_problem(command, project, capsys):
    assert COMMANDS[command](["--stack", "broken", "--project-dir", str(project)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Stack 'broken': ")
    assert "environment" in err
    assert "netwrk" in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_stack_is_required(command, capsys):
    with pytest.raises(SystemExit) as exited:
        COMMANDS[command]([])
    assert exited.value.code == 2
    assert "--stack" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["cost", "preflight"])
def test_json_and_markdown_cannot_be_combined(command, capsys):
    with pytest.raises(SystemExit) as exited:
        COMMANDS[command](["--stack", "dev", "--json", "--markdown"])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
