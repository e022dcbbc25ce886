"""Kueue's manager configuration, a YAML string inside the chart values that Helm passes through unchecked, against
the Configuration API of the pinned release: every key a field of its struct, every value of the field's type.
Kueue decodes that file strictly, so a misspelled key would stop the manager at start (and its webhooks, which fail
closed in team namespaces). The field names and types per struct are recorded in
tests/data/kueue-configuration-v1beta2.json with the repository, paths and commit they come from."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
import yaml

from components.kueue.values import FRAMEWORKS, chart_values, manager_config
from components.scheduling import SYSTEM_PLACEMENT
from components.versions import KUEUE
from tests.conftest import DATA
from tests.kueue_support import CHART

SCHEMA = json.loads((DATA / "kueue-configuration-v1beta2.json").read_text())
needs_chart = pytest.mark.skipif(not CHART.is_dir(), reason="the pinned Kueue chart is not beside the repository")
#: A Go duration (time.ParseDuration): a sequence of decimal numbers with a unit each, or 0.
GO_DURATION = re.compile(r"^(0|[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+)$")
#: The chart's default settings the platform changes on purpose: it queues only the frameworks it runs.
CHANGED_ON_PURPOSE = {"integrations.frameworks"}


def problems(value: Any, kind: Any = None, path: str = "") -> list[str]:
    """Where `value` is not what Kueue's Configuration API reads, each with its key path."""
    if kind is None:
        kind = {"struct": SCHEMA["kind"]}
    where = path or "(the configuration)"
    if value is None:
        return []  # JSON null leaves a field at its zero value: Go's decoder accepts it for any field
    if isinstance(kind, str):
        fits = {
            "string": isinstance(value, str),
            "bool": isinstance(value, bool),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, int | float) and not isinstance(value, bool),
            "duration": isinstance(value, str) and GO_DURATION.match(value) is not None,
            "quantity": isinstance(value, str | int | float) and not isinstance(value, bool),
            "object": isinstance(value, dict),
        }[kind]
        return [] if fits else [f"{where}: expected {kind}, got {value!r}"]
    if "list" in kind:
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {value!r}"]
        return [p for index, item in enumerate(value) for p in problems(item, kind["list"], f"{path}[{index}]")]
    if not isinstance(value, dict):
        return [f"{where}: expected a mapping, got {value!r}"]
    if "map" in kind:
        return [p for key, item in value.items() for p in problems(item, kind["map"], f"{path}.{key}".lstrip("."))]
    fields = SCHEMA["structs"][kind["struct"]]
    found = []
    for key, item in value.items():
        key_path = f"{path}.{key}".lstrip(".")
        if key not in fields:
            found.append(f"{key_path}: not a field of {kind['struct']} (its fields: {', '.join(sorted(fields))})")
        else:
            found += problems(item, fields[key], key_path)
    return found


def ours() -> dict[str, Any]:
    """The configuration as the chart receives it: the YAML string in the values, parsed."""
    values = chart_values(placement=SYSTEM_PLACEMENT)
    parsed: dict[str, Any] = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    return parsed


def chart_default() -> dict[str, Any]:
    upstream = yaml.safe_load((CHART / "values.yaml").read_text())
    parsed: dict[str, Any] = yaml.safe_load(upstream["managerConfig"]["controllerManagerConfigYaml"])
    return parsed


def leaves(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        return {k: v for key, item in value.items() for k, v in leaves(item, f"{path}.{key}".lstrip(".")).items()}
    return {path: value}


def test_the_schema_is_the_pinned_releases():
    assert SCHEMA["source"]["tag"] == f"v{KUEUE.version}"
    assert re.fullmatch(r"[0-9a-f]{40}", SCHEMA["source"]["commit"])


def test_the_platforms_manager_configuration_has_only_fields_of_kueues_configuration_api_with_their_types():
    config = ours()
    assert config == manager_config()  # the string says what the function returns
    assert (config["apiVersion"], config["kind"]) == (SCHEMA["apiVersion"], SCHEMA["kind"])
    assert problems(config) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # a misspelled top-level key: Kueue would stop at start
        (
            lambda c: c.update(manageJobsWithoutQueueNames=c.pop("manageJobsWithoutQueueName")),
            "manageJobsWithoutQueueNames: not a field of Configuration",
        ),
        # a misspelled nested key
        (
            lambda c: c["integrations"].update(framework=c["integrations"].pop("frameworks")),
            "integrations.framework: not a field of Integrations",
        ),
        (lambda c: c["managedJobsNamespaceSelector"].update(matchLabel={}), "managedJobsNamespaceSelector.matchLabel"),
        # wrong types
        (lambda c: c["webhook"].update(port="9443"), "webhook.port: expected integer, got '9443'"),
        (lambda c: c.update(manageJobsWithoutQueueName="false"), "manageJobsWithoutQueueName: expected bool"),
        (lambda c: c["leaderElection"].update(leaseDuration=15), "leaderElection.leaseDuration: expected duration"),
        (lambda c: c["integrations"].update(frameworks="pod"), "integrations.frameworks: expected a list"),
    ],
)
def test_a_misspelled_key_or_a_value_of_the_wrong_type_is_caught_by_its_path(change, expected):
    config = copy.deepcopy(ours())
    change(config)
    found = problems(config)
    assert any(p.startswith(expected) for p in found), found


@needs_chart
def test_the_charts_default_configuration_passes_the_same_check():
    """The recorded fields read the chart's own default as Kueue does (a check of the recorded data itself)."""
    assert problems(chart_default()) == []


@needs_chart
def test_the_manager_keeps_every_default_of_the_chart_but_the_frameworks_it_queues():
    default, mine = leaves(chart_default()), leaves(ours())
    changed = {
        path: (value, mine.get(path))
        for path, value in default.items()
        if path not in CHANGED_ON_PURPOSE and mine.get(path) != value
    }
    assert changed == {}
    assert set(FRAMEWORKS) <= set(chart_default()["integrations"]["frameworks"])
    # What the platform adds to the chart's default: what is queued, where, and which resources Kueue counts.
    added = {path.split(".")[0] for path in mine.keys() - default.keys()}
    assert added == {"manageJobsWithoutQueueName", "managedJobsNamespaceSelector", "resources", "waitForPodsReady"}
