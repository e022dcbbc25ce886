"""The configuration references in docs/configuration.md (the platform stack's and a team stack's) are generated from
the config models: each is current, every key in it is one a stack file can set, its defaults are what a stack gets,
and no key goes without a meaning."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.config.errors import ConfigError
from components.platform.parse import parse_config
from components.team.config import parse_team_config
from components.tools import config_reference as reference
from tests.conftest import REPO

PAGE = REPO / "docs" / "configuration.md"

NS = "eks-ml-platform"
ROWS = reference.rows()
START, END = reference.PLATFORM.start, reference.PLATFORM.end


def _minimal(environment: str) -> dict[str, str]:
    config = {"aws:region": "us-west-2", f"{NS}:environment": environment, f"{NS}:owner": "ml-platform"}
    if environment == "dev":  # dev's public endpoint needs the CIDRs it admits
        config[f"{NS}:cluster"] = json.dumps({"endpoint": {"publicCidrs": ["203.0.113.0/24"]}})
    return config


def _issues(raw: dict[str, str]) -> dict[str, str]:
    try:
        parse_config(raw, project=NS, stack="test")
    except ConfigError as error:
        return {issue.path: issue.message for issue in error.issues}
    return {}


def _nested(segments: list[str], value: Any) -> Any:
    """A config document holding `value` at the reference key's segments (`<name>` a name, `x[]` one item)."""
    if not segments:
        return value
    head, rest = segments[0], segments[1:]
    inner = _nested(rest, value)
    if head.endswith(reference.ITEM):
        return {head.removesuffix(reference.ITEM): [inner]}
    return {"probe" if head == reference.NAME else head: inner}


def _probe(key: str) -> dict[str, str]:
    """Problems of a dev stack that sets `key` to a value of no type any key takes."""
    raw = _minimal("dev")
    if key.startswith("aws:"):
        raw[key] = "probe"
        return _issues(raw)
    top, *rest = key.split(".")
    document = _nested([top, *rest], [[]])
    for section, value in document.items():
        raw[f"{NS}:{section}"] = json.dumps(value)
    return _issues(raw)


def test_the_reference_page_block_is_what_the_models_generate():
    page = PAGE.read_text()
    assert reference.replace_block(page, reference.table(ROWS)) == page, (
        "docs/configuration.md's platform reference differs from the config models: run `make config-reference`"
    )


def test_every_field_a_stack_file_can_set_has_a_description():
    assert len(ROWS) > 150
    assert reference.undescribed() == []


def test_rows_name_each_key_once():
    keys = [row.key for row in ROWS]
    assert sorted({k for k in keys if keys.count(k) > 1}) == []


def test_a_key_the_stack_does_not_take_is_reported_by_the_probe():
    """The probe below tells a known key from an unknown one."""
    assert _probe("network.natGateway")["network.natGateway"].startswith("unknown key")
    assert "unknown key" in _probe("karpenter.nodePools.<name>.taints[].kye")["karpenter.nodePools.probe.taints[0].kye"]
    assert "is not read" in _probe("aws:accessKey")["aws:accessKey"]


@pytest.mark.parametrize("key", [row.key for row in ROWS])
def test_every_key_in_the_reference_is_one_a_stack_file_can_set(key):
    found = _probe(key)
    assert {path: m for path, m in found.items() if "unknown key" in m or "is not read" in m} == {}


def _at(document: Any, key: str) -> Any:
    for segment in key.split("."):
        if not isinstance(document, dict) or segment not in document:
            return None
        document = document[segment]
    return document


@pytest.mark.parametrize("environment", ["dev", "prod"])
def test_the_default_shown_is_what_a_stack_that_leaves_the_key_out_gets(environment):
    raw = _minimal(environment)
    config = parse_config(raw, project=NS, stack=environment).model_dump(mode="json", by_alias=True)
    set_here = {"environment", "owner", "cluster.endpoint.publicCidrs"}
    checked = []
    for row in ROWS:
        parent = row.key.rpartition(".")[0]
        per_name = reference.NAME in row.key or reference.ITEM in row.key
        if per_name or row.key.startswith("aws:") or row.key in set_here or (parent and _at(config, parent) is None):
            continue  # keys of an entry the stack has none of, or of a section it leaves out (none)
        expected = row.by_environment.get(environment, row.default)
        if expected is reference.REQUIRED or expected is reference.SECTION:
            continue
        got = _at(config, row.key)
        if not isinstance(expected, dict):  # the region the reference writes as <region>
            expected = json.loads(json.dumps(expected).replace(reference.REGION, "us-west-2"))
        if isinstance(expected, dict) and all(v is reference.SECTION for v in expected.values()):
            got, expected = sorted(got), sorted(expected)  # a mapping of sections: its keys
        assert (row.key, got) == (row.key, expected)
        checked.append(row.key)
    by_environment = {"statefulResources", "network.natGateways", "network.availabilityZones"}
    assert by_environment | {"karpenter.nodePools", "storage.buckets"} <= set(checked)
    assert len(checked) > 50


def test_a_default_from_the_environment_is_shown_for_each_environment():
    row = next(r for r in ROWS if r.key == "network.natGateways")
    assert reference.default_text(row) == "*env*: dev `single`, prod `perAz`"
    row = next(r for r in ROWS if r.key == "cluster.endpoint.private")
    assert reference.default_text(row) == "`true`"


def test_the_block_is_replaced_between_its_markers_only():
    text = f"before\n{START}\nold\n{END}\nafter\n"
    assert reference.replace_block(text, "new\n") == f"before\n{START}\nnew\n{END}\nafter\n"
    with pytest.raises(ValueError, match=r"expected one .* block"):
        reference.replace_block("no markers", "new\n")


def test_make_config_reference_rewrites_both_blocks(tmp_path):
    team = reference.TEAM
    page = tmp_path / "configuration.md"
    page.write_text(f"# x\n\n{START}\n| stale |\n{END}\n\n## team\n\n{team.start}\n| stale |\n{team.end}\n")
    assert reference.main(["--write", str(page)]) == 0
    assert page.read_text() == (
        f"# x\n\n{START}\n{reference.table()}{END}\n\n"
        f"## team\n\n{team.start}\n{reference.table(stack=team)}{team.end}\n"
    )
    assert "-m components.tools.config_reference --write docs/configuration.md" in (REPO / "Makefile").read_text()


def test_a_page_without_the_team_block_is_an_error_not_half_written(tmp_path, capsys):
    page = tmp_path / "configuration.md"
    text = f"# x\n\n{START}\n| stale |\n{END}\n"
    page.write_text(text)
    assert reference.main(["--write", str(page)]) == 1
    assert reference.TEAM.start in capsys.readouterr().err
    assert page.read_text() == text


# ------------------------------------------------------------------------------------------- the team stack's

TEAM_ROWS = reference.rows(reference.TEAM)
TEAM_PROJECT = "team-vision"


def _team_minimal() -> dict[str, str]:
    return {
        "aws:region": "us-west-2",
        f"{TEAM_PROJECT}:platformStack": "acme/eks-ml-platform/prod",
        f"{TEAM_PROJECT}:owner": "vision-leads",
        f"{TEAM_PROJECT}:team": json.dumps({"name": "vision", "quota": {"gpus": 1}}),
    }


def _team_issues(raw: dict[str, str]) -> dict[str, str]:
    try:
        parse_team_config(raw, project=TEAM_PROJECT, stack="prod")
    except ConfigError as error:
        return {issue.path: issue.message for issue in error.issues}
    return {}


def test_the_reference_page_team_block_is_what_the_team_models_generate():
    page = PAGE.read_text()
    assert reference.replace_block(page, reference.table(TEAM_ROWS, reference.TEAM), reference.TEAM) == page, (
        "docs/configuration.md's team stack reference differs from components/team/config.py: "
        "run `make config-reference`"
    )
    section = page.split("\n## A team stack's configuration\n", 1)[1].split("\n## ", 1)[0]
    assert reference.TEAM.start in section  # under the team stack's heading, not the platform's


def test_a_stale_team_block_is_caught():
    page = PAGE.read_text()
    stale = reference.replace_block(page, reference.table(TEAM_ROWS[:-1], reference.TEAM), reference.TEAM)
    assert reference.replace_block(stale, reference.table(TEAM_ROWS, reference.TEAM), reference.TEAM) != stale


def test_every_field_a_team_stack_file_can_set_has_a_description():
    assert len(TEAM_ROWS) > 30
    assert "team.kubeflow.owner" in {row.key for row in TEAM_ROWS}
    assert reference.undescribed(reference.TEAM) == []


def test_a_team_key_the_stack_does_not_take_is_reported_by_the_probe():
    raw = _team_minimal()
    raw[f"{TEAM_PROJECT}:team"] = json.dumps({"name": "vision", "quota": {"gpus": 1, "gpu": 2}})
    assert _team_issues(raw)["team.quota.gpu"].startswith("unknown key")


@pytest.mark.parametrize("key", [row.key for row in TEAM_ROWS])
def test_every_key_in_the_team_reference_is_one_a_team_stack_file_can_set(key):
    raw = _team_minimal()
    if key.startswith("aws:"):
        raw[key] = "probe"
    else:
        top, *rest = key.split(".")
        value = _nested(rest, [[]])  # a value of no type any key takes, at the key's place
        if top == "team" and rest:
            value = {"name": "vision", "quota": {"gpus": 1}, **value}
        raw[f"{TEAM_PROJECT}:{top}"] = json.dumps(value)
    found = _team_issues(raw)
    assert {path: m for path, m in found.items() if "unknown key" in m or "is not read" in m} == {}


def test_the_default_shown_is_what_a_team_stack_that_leaves_the_key_out_gets():
    config = parse_team_config(_team_minimal(), project=TEAM_PROJECT, stack="prod").model_dump(
        mode="json", by_alias=True
    )
    config["aws:region"], config["aws:profile"] = config.pop("region"), config.pop("profile")
    checked = []
    for row in TEAM_ROWS:
        parent = row.key.rpartition(".")[0]
        if (
            reference.NAME in row.key
            or row.default in (reference.REQUIRED, reference.SECTION)
            or (parent and _at(config, parent) is None)
        ):
            continue
        assert (row.key, _at(config, row.key)) == (row.key, row.default)
        checked.append(row.key)
    assert {"team.quota.cpu", "team.network.webhookPorts", "team.kubeflow", "aws:profile"} <= set(checked)
    assert reference.default_text(next(r for r in TEAM_ROWS if r.key == "team.quota.memory")) == "`256Gi`"


@pytest.mark.parametrize("stack", [reference.PLATFORM, reference.TEAM], ids=["platform", "team"])
def test_a_string_the_models_check_against_a_pattern_is_documented_by_what_it_must_look_like(stack):
    """A key whose value must match a pattern (an email, a DNS label, an ARN) is shown as what it must look like, not
    as a bare "string" the user would fill with anything (`config.validation.matches` carries the words)."""
    bare = [
        row.key
        for f, row in zip(reference.fields(stack), reference.rows(stack), strict=True)
        if row.type in ("string", "non-empty string")
        and any(type(m).__name__ == "AfterValidator" for m in _all_metadata(f.info.annotation, f.info.metadata))
    ]
    assert bare == []
    owner = {row.key: row.type for row in ROWS}["kubeflow.teams.<name>.owner"]
    assert owner == "an email address like `lead@example.org`"


def _all_metadata(annotation: Any, metadata: Any) -> list[Any]:
    found = list(metadata)
    while hasattr(annotation, "__metadata__"):
        found += annotation.__metadata__
        annotation = annotation.__origin__
    return found
