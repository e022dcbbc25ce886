"""Stack config accepts what the pinned Karpenter CRDs accept and refuses what they refuse: the rules config applies
(`components/karpenter/crd_rules.json`) are derived again from the CRDs and compared, config's enums are the CRDs',
and each case where they used to disagree is checked on both sides (config, and refcheck with the CRDs' CEL rules).
Where config stays stricter than the CRD, the reason is a node or Karpenter refusing later, and the test says so."""

from __future__ import annotations

import copy
import difflib
import json
import re
import shutil
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from components.karpenter import crd_rules
from components.karpenter.pool_fields import BudgetSpec, DisruptionSpec, Operator, TaintSpec
from components.karpenter.render import render_nodeclass, render_nodepool
from components.karpenter.validation import WELL_KNOWN_LABELS as WELL_KNOWN
from components.karpenter.validation import requirement_key_problem
from components.tools import karpenter_crd_rules
from tests.conftest import REPO
from tests.karpenter_support import CONTEXT, P, crd_findings, karpenter_config, node_class, pool, problems, req

CRDS = REPO.parent / "shared" / "reference" / "karpenter" / "crds"
needs_crds = pytest.mark.skipif(not CRDS.is_dir(), reason="the pinned Karpenter CRDs are not beside the repository")


# ------------------------------------------------------------------------------------------ the rules themselves


@needs_crds
def test_the_rules_config_applies_are_those_the_pinned_crds_state():
    assert karpenter_crd_rules.render(karpenter_crd_rules.derive(CRDS)) == karpenter_crd_rules.shipped()


def _crds_with(tmp_path: Path, change: Any) -> Path:
    copied = tmp_path / "crds"
    shutil.copytree(CRDS, copied)
    path = copied / karpenter_crd_rules.NODEPOOL
    crd = yaml.safe_load(path.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    change(version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["template"]["properties"]["spec"])
    path.write_text(yaml.safe_dump(crd))
    return copied


@needs_crds
def test_a_crd_bump_that_changes_a_pattern_or_adds_a_rule_shows_up(tmp_path):
    def narrower_taint_values(spec: dict[str, Any]) -> None:
        spec["properties"]["taints"]["items"]["properties"]["value"]["pattern"] = "^[a-z]+$"

    derived = karpenter_crd_rules.derive(_crds_with(tmp_path, narrower_taint_values))
    assert derived["rules"]["nodePool.taintValue"]["pattern"] == "^[a-z]+$"
    assert karpenter_crd_rules.render(derived) != karpenter_crd_rules.shipped()

    def new_rule(spec: dict[str, Any]) -> None:
        key = spec["properties"]["requirements"]["items"]["properties"]["key"]
        key["x-kubernetes-validations"].append({"message": "m", "rule": "self.size() < 100"})

    shutil.rmtree(tmp_path / "crds")
    with pytest.raises(ValueError, match=r"a CEL rule of a shape this tool does not read: self.size\(\) < 100"):
        karpenter_crd_rules.derive(_crds_with(tmp_path, new_rule))


def test_config_offers_the_operators_effects_policies_and_reasons_the_crd_does():
    assert sorted(get_args(Operator)) == list(crd_rules.enum("nodePool.requirementOperator"))
    effect = TaintSpec.model_fields["effect"].annotation
    assert sorted(get_args(effect)) == list(crd_rules.enum("nodePool.taintEffect"))
    policy = DisruptionSpec.model_fields["consolidation_policy"].annotation
    assert sorted(get_args(policy)) == list(crd_rules.enum("nodePool.consolidationPolicy"))
    (reasons, _) = get_args(BudgetSpec.model_fields["reasons"].annotation)
    assert sorted(get_args(get_args(reasons)[0])) == list(crd_rules.enum("nodePool.budgetReason"))


def test_the_rules_read_from_the_crds_cel_are_the_reserved_domains_and_operator_rules():
    key = crd_rules.RULES["nodePool.requirementKey"]
    assert set(key["reservedDomains"]) == {"karpenter.sh", "karpenter.k8s.aws"}
    assert "karpenter.k8s.aws/instance-gpu-name" in key["reservedDomains"]["karpenter.k8s.aws"]
    assert key["restrictedKeys"] == ["karpenter.sh/nodepool", "kubernetes.io/hostname"]
    requirements = crd_rules.RULES["nodePool.requirements"]
    assert requirements["minValuesAtMostValuesFor"] == ["In"]
    assert requirements["operatorsTakingOneWholeNumber"] == ["Gt", "Gte", "Lt", "Lte"]


# --------------------------------------------------------------------------- accepted by the CRD, and by config

EFA_CLASS = {"preset": "gpu-training", "efaLayout": "p5.48xlarge"}


def _rendered(spec_fields: dict[str, Any], class_fields: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    spec = pool(**spec_fields)
    cls = node_class(**(class_fields or {"preset": spec.node_class}))
    return [render_nodeclass(spec.node_class, cls, CONTEXT), render_nodepool("p", spec)]


ACCEPTED: dict[str, dict[str, Any]] = {
    "minValues with Exists": {
        "preset": "gpu-inference",
        "requirements": [req("karpenter.k8s.aws/instance-family", "Exists", minValues=2)],
    },
    "minValues with NotIn": {
        "preset": "gpu-inference",
        "requirements": [req("karpenter.k8s.aws/instance-family", "NotIn", "g4dn", minValues=2)],
    },
    "minValues with Gt": {
        "preset": "cpu-general",
        "requirements": [req("karpenter.k8s.aws/instance-cpu", "Gt", "4", minValues=3)],
    },
    "limits.nodes": {"preset": "cpu-general", "limits": {"cpu": "64", "nodes": 10}},
    "limits.nodes alone": {"preset": "cpu-general", "limits": {"nodes": "4"}},
}


@pytest.mark.parametrize("fields", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_what_the_crd_accepts_config_accepts(fields):
    spec = pool(**fields)
    assert spec.model_dump(by_alias=True, exclude_unset=True)  # validated: no error


@pytest.mark.refcheck
@pytest.mark.parametrize("fields", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_what_config_now_accepts_the_crd_accepts(fields):
    assert crd_findings(_rendered(fields)) == []


def test_limits_nodes_is_rendered_and_checked_as_a_count():
    rendered = render_nodepool("p", pool(**ACCEPTED["limits.nodes"]))
    assert rendered["spec"]["limits"]["nodes"] == "10"
    assert problems(preset="cpu-general", limits={"nodes": "4.5"}) == {
        f"{P}.limits.nodes": "expected a whole number of nodes, got '4.5'"
    }


def test_a_pool_on_an_efa_class_may_leave_the_instance_types_to_karpenter():
    config = karpenter_config(
        {"nodeClasses": {"efa": EFA_CLASS}, "nodePools": {"p": {"preset": "gpu-training", "nodeClass": "efa"}}}
    )
    assert config.efa_pools().keys() == {"p"}
    # Named types are still checked: one with too few network cards would never launch.
    found = problems(
        node_classes={"efa": EFA_CLASS},
        preset="gpu-training",
        nodeClass="efa",
        gpuNames=["h200"],
        requirements=[req("node.kubernetes.io/instance-type", "In", "p5en.48xlarge")],
    )
    assert found == {f"{P}.requirements": "'p5en.48xlarge' has 16 network cards; node class 'efa' needs 32"}


@pytest.mark.refcheck
def test_the_crd_accepts_a_pool_on_an_efa_class_that_names_no_types():
    assert crd_findings(_rendered({"preset": "gpu-training", "nodeClass": "efa"}, EFA_CLASS)) == []


def test_reserved_capacity_without_a_reservation_is_a_warning_not_an_error():
    config = karpenter_config(
        {"nodePools": {"p": {"preset": "gpu-training", "capacityTypes": ["reserved", "on-demand"]}}}
    )
    assert config.node_pools["p"].capacity_types == ("reserved", "on-demand")
    assert config.warnings() == [
        (
            f"{P}.capacityTypes",
            (
                "lists reserved, but reserved capacity launches only into capacity reservations the node class "
                "selects, and node class 'gpu-training' has no capacityReservationSelectorTerms: Karpenter never "
                "launches reserved capacity for this pool (add the terms to the class, or leave out reserved)"
            ),
        )
    ]


# ---------------------------------------------------------------------------- refused by the CRD, and by config

BASE = {"preset": "cpu-general"}
#: Each case: the config change, the path config reports, what it says, and the same change made to the rendered
#: NodePool (to show the CRD refuses it).
REFUSED: dict[str, tuple[dict[str, Any], str, str, Any]] = {
    "requirement key with two slashes": (
        {"requirements": [req("eksml.io/a/b", "Exists")]},
        "requirements[0].key",
        (
            "'eksml.io/a/b' is not a label key: expected an optional DNS prefix and '/', then a name of letters, "
            "digits, '-', '_' or '.' starting and ending with a letter or digit, like 'eksml.io/team' (at most 316 "
            "characters)"
        ),
        lambda spec: spec["template"]["spec"]["requirements"].append({"key": "eksml.io/a/b", "operator": "Exists"}),
    ),
    "requirement key in Karpenter's domain": (
        {"requirements": [req("karpenter.k8s.aws/favourite", "Exists")]},
        "requirements[0].key",
        (
            "'karpenter.k8s.aws/favourite' is in the reserved domain karpenter.k8s.aws; use a domain of your own "
            "(e.g. 'eksml.io/...') or node.kubernetes.io (the keys Karpenter knows there are listed in the README)"
        ),
        lambda spec: spec["template"]["spec"]["requirements"].append(
            {"key": "karpenter.k8s.aws/favourite", "operator": "Exists"}
        ),
    ),
    "taint value with a space": (
        {"taints": [{"key": "eksml.io/dedicated", "value": "a b", "effect": "NoSchedule"}]},
        "taints[0].value",
        "expected a label value of at most 63 letters, digits, '-', '_' or '.', got 'a b'",
        lambda spec: (
            spec["template"]["spec"]
            .setdefault("taints", [])
            .append({"key": "eksml.io/dedicated", "value": "a b", "effect": "NoSchedule"})
        ),
    ),
    "taint value starting with a dash": (
        {"taints": [{"key": "eksml.io/dedicated", "value": "-x", "effect": "NoSchedule"}]},
        "taints[0].value",
        "expected a label value of at most 63 letters, digits, '-', '_' or '.', got '-x'",
        lambda spec: (
            spec["template"]["spec"]
            .setdefault("taints", [])
            .append({"key": "eksml.io/dedicated", "value": "-x", "effect": "NoSchedule"})
        ),
    ),
    "taint key with a space": (
        {"taints": [{"key": "eksml.io/a b", "effect": "NoSchedule"}]},
        "taints[0].key",
        (
            "expected a Kubernetes label key like 'eksml.io/team': an optional DNS prefix and '/', then a name of at "
            "most 63 letters, digits, '-', '_' or '.', got 'eksml.io/a b'"
        ),
        lambda spec: (
            spec["template"]["spec"].setdefault("taints", []).append({"key": "eksml.io/a b", "effect": "NoSchedule"})
        ),
    ),
    "label value too long": (
        {"labels": {"eksml.io/team": "x" * 64}},
        "labels.eksml.io/team",
        f"expected a label value of at most 63 letters, digits, '-', '_' or '.', got '{'x' * 64}'",
        lambda spec: (
            spec["template"].setdefault("metadata", {}).setdefault("labels", {}).update({"eksml.io/team": "x" * 64})
        ),
    ),
    "minValues above the values In lists": (
        {"requirements": [req("karpenter.k8s.aws/instance-family", "In", "m7i", minValues=2)]},
        "requirements[0].minValues",
        "asks for 2 distinct values but the requirement lists 1",
        lambda spec: spec["template"]["spec"]["requirements"].append(
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7i"], "minValues": 2}
        ),
    ),
    "weight above 100": (
        {"weight": 101},
        "weight",
        "Input should be less than or equal to 100, got 101",
        lambda spec: spec.update({"weight": 101}),
    ),
}


@pytest.mark.parametrize(("change", "path", "message", "_"), REFUSED.values(), ids=REFUSED.keys())
def test_what_the_crd_refuses_config_refuses_naming_the_key_and_what_was_expected(change, path, message, _):
    assert problems(**{**BASE, **change})[f"{P}.{path}"] == message


@pytest.mark.refcheck
@pytest.mark.parametrize(("_", "path", "message", "patch"), REFUSED.values(), ids=REFUSED.keys())
def test_the_crd_refuses_what_config_refuses(_, path, message, patch):
    objects = _rendered(BASE)
    assert crd_findings(objects) == []
    patched = copy.deepcopy(objects)
    patch(patched[1]["spec"])
    assert [f for f in crd_findings(patched) if f.startswith("ERROR")]


# ------------------------------------------------------------------- where config stays stricter, and why

#: Accepted by the CRD, refused by config: each would be refused later (by the node, or by Karpenter at runtime) or
#: would silently do nothing.
STRICTER: dict[str, tuple[dict[str, Any], str, Any]] = {
    # The taint value pattern is a qualified name's; the node takes only label values.
    "taint value with a slash": (
        {"taints": [{"key": "eksml.io/dedicated", "value": "a/b", "effect": "NoSchedule"}]},
        "taints[0].value",
        lambda spec: (
            spec["template"]["spec"]
            .setdefault("taints", [])
            .append({"key": "eksml.io/dedicated", "value": "a/b", "effect": "NoSchedule"})
        ),
    ),
    # The CRD states the value pattern on the list, where the API server does not apply it.
    "requirement value with a space": (
        {"requirements": [req("eksml.io/team", "In", "a b")]},
        "requirements[0].values",
        lambda spec: spec["template"]["spec"]["requirements"].append(
            {"key": "eksml.io/team", "operator": "In", "values": ["a b"]}
        ),
    ),
    # No instance type has a value for a key that does not exist: minValues can never be met.
    "minValues with DoesNotExist": (
        {"requirements": [req("eksml.io/spare", "DoesNotExist", minValues=1)]},
        "requirements[0].minValues",
        lambda spec: spec["template"]["spec"]["requirements"].append(
            {"key": "eksml.io/spare", "operator": "DoesNotExist", "minValues": 1}
        ),
    ),
    # Excludes nothing.
    "NotIn without values": (
        {"requirements": [req("eksml.io/team", "NotIn")]},
        "requirements[0].values",
        lambda spec: spec["template"]["spec"]["requirements"].append({"key": "eksml.io/team", "operator": "NotIn"}),
    ),
}


@pytest.mark.parametrize(("change", "path", "_"), STRICTER.values(), ids=STRICTER.keys())
def test_config_refuses_what_would_fail_or_do_nothing_after_the_crd(change, path, _):
    assert f"{P}.{path}" in problems(**{**BASE, **change})


@pytest.mark.refcheck
@pytest.mark.parametrize(("_", "path", "patch"), STRICTER.values(), ids=STRICTER.keys())
def test_the_crd_alone_would_let_these_through(_, path, patch):
    objects = _rendered(BASE)
    patch(objects[1]["spec"])
    assert crd_findings(objects) == []


def test_the_shipped_rules_file_is_sorted_json_as_the_tool_writes_it():
    text = karpenter_crd_rules.shipped()
    assert text == karpenter_crd_rules.render(json.loads(text))


# ------------------------------------------------------------------------------ generated keys and values

_PREFIXES = st.sampled_from(["", "eksml.io/", "karpenter.sh/", "karpenter.k8s.aws/", "team.karpenter.sh/", "a/"])
_TEXT = st.text(alphabet="abZ09.-_/ ", min_size=1, max_size=12)


def _crd_refuses(objects: list[dict[str, Any]]) -> bool:
    return any(f.startswith("ERROR") for f in crd_findings(objects))


@pytest.mark.refcheck
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(_PREFIXES, _TEXT)
def test_config_and_the_crd_agree_on_requirement_keys(prefix, name):
    key = prefix + name
    objects = _rendered(BASE)
    objects[1]["spec"]["template"]["spec"]["requirements"].append({"key": key, "operator": "Exists"})
    # Keys that only config refuses, each for its reason: kubelet domains (Karpenter's runtime validation) and near
    # misses of well-known keys (a typo that would launch nothing).
    assume(not re.search(r"(^|\.)(kubernetes\.io|k8s\.io)/", key))
    assume(not difflib.get_close_matches(key, sorted(WELL_KNOWN), n=1, cutoff=0.85) or key in WELL_KNOWN)
    assert (requirement_key_problem(key) is not None) == _crd_refuses(objects), key


@pytest.mark.refcheck
@settings(max_examples=80, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(_TEXT)
def test_what_config_accepts_as_a_taint_value_the_crd_accepts(value):
    objects = _rendered(BASE)
    objects[1]["spec"]["template"]["spec"].setdefault("taints", []).append(
        {"key": "eksml.io/dedicated", "value": value, "effect": "NoSchedule"}
    )
    try:
        TaintSpec.model_validate({"key": "eksml.io/dedicated", "value": value, "effect": "NoSchedule"})
        accepted = True
    except ValidationError:
        accepted = False
    # Config is the CRD's rule and the node's (label values): never wider than the CRD.
    if accepted:
        assert not _crd_refuses(objects), value
