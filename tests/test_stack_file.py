"""Stack files are read as Pulumi reads them: a repeated key or a YAML syntax error is one config error at its
line and column, before anything runs, with the config exit status."""

from __future__ import annotations

import pytest

from components.config.errors import ConfigError
from components.config.stack_file import load_stack_file

POOLS = """config:
  eks-ml-platform:karpenter:
    nodePools:
      cpu-general:
        preset: cpu-general
      gpu-inference:
        preset: gpu-inference
      cpu-general:
        preset: cpu-general
"""


def test_a_key_given_twice_is_refused_at_its_second_line_naming_the_first(tmp_path):
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(POOLS)
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path)
    (issue,) = caught.value.issues
    assert issue.path == "Pulumi.dev.yaml:8:7"
    assert "'cpu-general' is given twice in one mapping (first on line 4)" in issue.message


def test_the_same_key_in_two_mappings_is_fine(tmp_path):
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text("config:\n  a: {preset: x}\n  b: {preset: y}\n")
    assert load_stack_file(path) == {"config": {"a": {"preset": "x"}, "b": {"preset": "y"}}}


def test_a_syntax_error_is_one_issue_with_file_line_and_column(tmp_path):
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text("config:\n  aws:region: [us-west-2\n")
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path)
    (issue,) = caught.value.issues
    assert issue.path == "Pulumi.bad.yaml:3:1"
    assert "expected ',' or ']'" in issue.message


def test_the_preview_exits_with_the_config_status_and_no_traceback(tmp_path, capsys):
    from components.tools.preview import main

    (tmp_path / "Pulumi.yaml").write_text("name: eks-ml-platform\nruntime: python\n")
    (tmp_path / "Pulumi.dev.yaml").write_text(POOLS)
    assert main(["--stack", "dev", "--project-dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Pulumi.dev.yaml:8:7: the key 'cpu-general' is given twice" in err
    assert "Traceback" not in err
