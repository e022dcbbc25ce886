"""The configuration reference in the README is generated from the config models: it is current, every key in it is
one a stack file can set, its defaults are what a stack gets, and no key goes without a meaning."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.config import reference
from components.config.errors import ConfigError
from components.config.platform import parse_config
from tests.conftest import REPO

NS = "eks-ml-platform"
ROWS = reference.rows()


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


def test_the_readme_block_is_what_the_models_generate():
    readme = (REPO / "README.md").read_text()
    assert reference.replace_block(readme, reference.table(ROWS)) == readme, (
        "the README's configuration reference differs from the config models: run `make config-reference`"
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
    text = f"before\n{reference.START}\nold\n{reference.END}\nafter\n"
    assert reference.replace_block(text, "new\n") == f"before\n{reference.START}\nnew\n{reference.END}\nafter\n"
    with pytest.raises(ValueError):
        reference.replace_block("no markers", "new\n")


def test_make_config_reference_rewrites_the_block(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{reference.START}\n| stale |\n{reference.END}\n")
    assert reference.main(["--write", str(readme)]) == 0
    assert readme.read_text() == f"# x\n\n{reference.START}\n{reference.table()}{reference.END}\n"
    assert "-m components.config.reference --write README.md" in (REPO / "Makefile").read_text()
