"""Mistakes in single NodePool fields, each reported with its full key path and what was expected: shapes, limits,
disruption budgets and their cron schedules, and node labels."""

from __future__ import annotations

import pytest

from components.karpenter.specs import NODE_POOL_PRESETS
from components.scheduling import GPU_RESOURCE, GPU_TAINT, NEURON_TAINT
from tests.karpenter_support import P, pool, problems

LIMITS = "cpu, memory, nodes, nvidia.com/gpu, aws.amazon.com/neuron or aws.amazon.com/neuroncore"


@pytest.mark.parametrize(
    ("fields", "path", "message"),
    [
        (
            {"preset": "gpu-inference", "limits": {GPU_RESOURCE: "1.5"}},
            "limits.nvidia.com/gpu",
            "expected a whole number of devices, got '1.5'",
        ),
        ({"preset": "cpu-general", "limits": {"gpus": "4"}}, "limits.gpus", f"unknown resource; expected {LIMITS}"),
        (
            {"preset": "cpu-general", "limits": {"memory": "4 TB"}},
            "limits.memory",
            "expected a Kubernetes quantity like '1000', '500m' or '4000Gi', got '4 TB'",
        ),
        (
            {"preset": "cpu-general", "taints": [GPU_TAINT.as_dict()]},
            "taints",
            "carries the nvidia.com/gpu taint but launches no GPU instances",
        ),
        (
            {"preset": "cpu-general", "taints": [NEURON_TAINT.as_dict()]},
            "taints",
            "carries the aws.amazon.com/neuron taint but launches no Neuron instances",
        ),
        ({"preset": "cpu-general", "weight": 0}, "weight", "Input should be greater than or equal to 1, got 0"),
        (
            {"preset": "cpu-general", "capacityTypes": ["preemptible"]},
            "capacityTypes[0]",
            "Input should be 'spot', 'on-demand' or 'reserved', got 'preemptible'",
        ),
        ({"preset": "cpu-general", "capacityTypes": []}, "capacityTypes", "expected at least one value"),
        (
            {"preset": "cpu-general", "expireAfter": "30d"},
            "expireAfter",
            "expected a duration like '30s', '5m', '720h' or 'Never', got '30d'",
        ),
        (
            {"preset": "gpu-training", "terminationGracePeriod": "Never"},
            "terminationGracePeriod",
            "expected a duration like '30s', '15m' or '2h' (there is no 'Never'), got 'Never'",
        ),
        (
            {"preset": "cpu-general", "disruption": {"consolidateAfter": "2 minutes"}},
            "disruption.consolidateAfter",
            "expected a duration like '30s', '5m', '720h' or 'Never', got '2 minutes'",
        ),
        (
            {"preset": "cpu-general", "disruption": {"consolidationPolicy": "WhenUnderutilized"}},
            "disruption.consolidationPolicy",
            "Input should be 'WhenEmpty', 'WhenEmptyOrUnderutilized' or 'Balanced', got 'WhenUnderutilized'",
        ),
        (
            {"preset": "cpu-general", "disruption": {"budgets": []}},
            "disruption.budgets",
            (
                "needs at least one budget; an empty list leaves the pool without any (leave the key out for "
                "Karpenter's 10%)"
            ),
        ),
        (
            {"preset": "cpu-general", "disruption": {"budgets": [{"nodes": "150%"}]}},
            "disruption.budgets[0].nodes",
            "expected a node count like '1' or a percentage like '10%', got '150%'",
        ),
        (
            {"preset": "cpu-general", "disruption": {"budgets": [{"nodes": "1", "schedule": "0 9 * * *"}]}},
            "disruption.budgets[0].duration",
            "schedule and duration go together",
        ),
        (
            {
                "preset": "cpu-general",
                "disruption": {"budgets": [{"nodes": "1", "schedule": "@daily", "duration": "30s"}]},
            },
            "disruption.budgets[0].duration",
            "expected a duration in hours and minutes like '8h' or '1h30m', got '30s'",
        ),
        (
            {"preset": "cpu-general", "disruption": {"budgets": [{"nodes": "1", "reasons": ["Expired"]}]}},
            "disruption.budgets[0].reasons[0]",
            "Input should be 'Underutilized', 'Empty' or 'Drifted', got 'Expired'",
        ),
        (
            {"preset": "cpu-general", "taints": [{"key": "dedicated", "effect": "NoExecut"}]},
            "taints[0].effect",
            "Input should be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute', got 'NoExecut'",
        ),
        (
            {"preset": "cpu-general", "labels": {"team": "a b"}},
            "labels.team",
            "expected a label value of at most 63 letters, digits, '-', '_' or '.', got 'a b'",
        ),
    ],
)
def test_mistake_in_a_pool_is_reported_with_its_key_path_and_expectation(fields, path, message):
    assert problems(**fields) == {f"{P}.{path}": message}


def test_unknown_preset_names_the_presets():
    assert problems(preset="large") == {
        f"{P}.preset": f"expected one of the presets {', '.join(sorted(NODE_POOL_PRESETS))}, got 'large'"
    }


def test_a_budget_node_count_may_be_written_as_a_number():
    assert pool(preset="cpu-general", disruption={"budgets": [{"nodes": 2}]}).disruption.budgets[0].nodes == "2"


# -------------------------------------------------------------------------------------------------- schedules


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        (
            "nine am",
            (
                "expected a cron schedule of five fields (minute hour day-of-month month day-of-week) like '0 9 * * "
                "mon-fri', or one of @annually, @yearly, @monthly, @weekly, @daily, @midnight, @hourly; got 'nine am'"
            ),
        ),
        (
            "@every 1h",
            (
                "unknown schedule macro '@every 1h'; expected one of @annually, @yearly, @monthly, @weekly, @daily, "
                "@midnight, @hourly"
            ),
        ),
        ("99 99 * * *", "minute '99' is outside 0-59; hour '99' is outside 0-23"),
        (
            "a b c d e",
            (
                "minute 'a' is not a value in 0-59; hour 'b' is not a value in 0-23; day-of-month 'c' is not a value "
                "in 1-31; month 'd' is not a value in 1-12 or jan-dec; day-of-week 'e' is not a value in 0-6 or "
                "sun-sat"
            ),
        ),
        ("0 9 0 * *", "day-of-month '0' is outside 1-31"),
        ("0 9 * 13 *", "month '13' is outside 1-12 or jan-dec"),
        ("0 9 * * 7", "day-of-week '7' is outside 0-6 or sun-sat"),
        ("0 9 * * fri-mon", "day-of-week 'fri-mon': the range 'fri-mon' ends before it starts"),
        ("0,61 9 * * *", "minute '0,61': '61' is outside 0-59"),
        ("*/0 9 * * *", "minute '*/0': the step '0' must be a whole number above 0"),
        ("0 9 * * mon-funday", "day-of-week 'mon-funday': 'funday' is not a value in 0-6 or sun-sat"),
    ],
)
def test_budget_schedules_are_parsed_field_by_field(schedule, message):
    budgets = [{"nodes": "0", "schedule": schedule, "duration": "8h"}]
    assert problems(preset="cpu-general", disruption={"budgets": budgets}) == {
        f"{P}.disruption.budgets[0].schedule": message
    }


@pytest.mark.parametrize(
    "schedule",
    [
        "0 9 * * mon-fri",
        "*/15 0-6,22-23 1,15 JAN-jun ?",
        "30 2 * * sun",
        "@daily",
        "@annually",
        "0 0 1 */3 *",
        "5/10 * * * *",
    ],
)
def test_schedules_karpenter_accepts_are_accepted(schedule):
    spec = pool(
        preset="cpu-general", disruption={"budgets": [{"nodes": "0", "schedule": schedule, "duration": "1h30m"}]}
    )
    assert spec.disruption.budgets[0].schedule == schedule


# ------------------------------------------------------------------------------------------------------ labels


@pytest.mark.parametrize(
    ("label", "message"),
    [
        (
            "karpenter.sh/nodepool",
            "'karpenter.sh/nodepool' is set on every node by Karpenter or the kubelet and cannot be set by a NodePool",
        ),
        (
            "kubernetes.io/hostname",
            "'kubernetes.io/hostname' is set on every node by Karpenter or the kubelet and cannot be set by a NodePool",
        ),
        (
            "karpenter.sh/team",
            (
                "'karpenter.sh/team' is in the reserved domain karpenter.sh; use a domain of your own (e.g. "
                "'eksml.io/...') or node.kubernetes.io"
            ),
        ),
        (
            "node-role.kubernetes.io/gpu",
            (
                "'node-role.kubernetes.io/gpu' is in the reserved domain kubernetes.io; use a domain of your own "
                "(e.g. 'eksml.io/...') or node.kubernetes.io"
            ),
        ),
        (
            "team.k8s.io/name",
            (
                "'team.k8s.io/name' is in the reserved domain k8s.io; use a domain of your own (e.g. 'eksml.io/...') "
                "or node.kubernetes.io"
            ),
        ),
        (
            "karpenter.k8s.aws/team",
            (
                "'karpenter.k8s.aws/team' is in the reserved domain karpenter.k8s.aws; use a domain of your own "
                "(e.g. 'eksml.io/...') or node.kubernetes.io"
            ),
        ),
    ],
)
def test_labels_in_reserved_domains_are_refused(label, message):
    assert problems(preset="cpu-general", labels={label: "x"}) == {f"{P}.labels.{label}": message}


def test_labels_karpenter_allows_are_accepted():
    labels = {
        "team": "a",
        "eksml.io/owner": "b",
        "node.kubernetes.io/role": "c",
        "karpenter.sh/capacity-type": "spot",
        "kops.k8s.io/x": "d",
    }
    assert pool(preset="cpu-general", labels=labels).labels.items() >= labels.items()
