"""Raw NodePool requirements: every key the pinned NodePool CRD admits, custom label keys, minValues, and the values
checked like the typed fields they stand for."""

from __future__ import annotations

import pytest

from components.karpenter.render import render_nodeclass, render_nodepool, requirements
from tests.karpenter_support import CONTEXT, P, crd_findings, node_class, pool, problems, req

GPU_NAMES = "a100, a10g, b200, h100, h200, l4, l40s, t4, t4g, v100"
CATEGORIES = "a, c, d, g, gr, h, hpc, i, im, inf, is, m, p, r, t, trn, x, z"
#: Keys the NodePool CRD's CEL rules admit in the karpenter.k8s.aws domain, besides the ones presets use.
CRD_KEYS = [
    "karpenter.k8s.aws/instance-capability-flex",
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
    "karpenter.k8s.aws/capacity-reservation-interruptible",
    "karpenter.k8s.aws/capacity-reservation-type",
    "karpenter.k8s.aws/placement-group-id",
    "karpenter.k8s.aws/placement-group-partition",
    "karpenter.k8s.aws/instance-tenancy",
    "karpenter.k8s.aws/ec2nodeclass",
    "topology.k8s.aws/zone-id",
]


@pytest.mark.parametrize("key", CRD_KEYS)
def test_every_key_the_nodepool_crd_admits_is_accepted(key):
    spec = pool(preset="cpu-general", requirements=[req(key, "Exists")])
    assert {"key": key, "operator": "Exists"} in requirements(spec)


def test_custom_label_keys_are_accepted_and_karpenter_labels_nodes_with_them():
    spec = pool(
        preset="cpu-general", requirements=[req("eksml.io/team", "In", "vision"), req("billing", "In", "a", "b")]
    )
    assert {"key": "eksml.io/team", "operator": "In", "values": ["vision"]} in requirements(spec)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (
            "karpenter.k8s.aws/instance-gpu-nam",
            (
                "unknown requirement key 'karpenter.k8s.aws/instance-gpu-nam'; did you mean "
                "'karpenter.k8s.aws/instance-gpu-name'?"
            ),
        ),
        (
            "node.kubernetes.io/instance-typ",
            (
                "unknown requirement key 'node.kubernetes.io/instance-typ'; did you mean "
                "'node.kubernetes.io/instance-type'?"
            ),
        ),
        (
            "karpenter.sh/nodepool",
            "'karpenter.sh/nodepool' is set on every node by Karpenter or the kubelet and cannot be set by a NodePool",
        ),
        (
            "karpenter.k8s.aws/favourite",
            (
                "'karpenter.k8s.aws/favourite' is in the reserved domain karpenter.k8s.aws; use a domain of your own "
                "(e.g. 'eksml.io/...') or node.kubernetes.io (the keys Karpenter knows there are listed in the "
                "README)"
            ),
        ),
    ],
)
def test_unknown_keys_in_reserved_domains_and_near_misses_are_refused(key, message):
    assert problems(preset="cpu-general", requirements=[req(key, "Exists")]) == {f"{P}.requirements[0].key": message}


def test_min_values_asks_for_flexibility_and_is_rendered():
    spec = pool(
        preset="gpu-inference",
        requirements=[req("karpenter.k8s.aws/instance-family", "In", "g4dn", "g5", "g6", minValues=2)],
    )
    assert {
        "key": "karpenter.k8s.aws/instance-family",
        "operator": "In",
        "values": ["g4dn", "g5", "g6"],
        "minValues": 2,
    } in requirements(spec)


@pytest.mark.parametrize(
    ("requirement", "path", "message"),
    [
        (
            req("karpenter.k8s.aws/instance-family", "In", "g5", minValues=2),
            "minValues",
            "asks for 2 distinct values but the requirement lists 1",
        ),
        (
            req("eksml.io/spare", "DoesNotExist", minValues=1),
            "minValues",
            (
                "operator DoesNotExist leaves the key without values, so no choice of instance types has 1 distinct "
                "ones and Karpenter would launch nothing; use it with In, NotIn, Exists, Gt or Lt"
            ),
        ),
        (
            req("karpenter.k8s.aws/instance-family", "In", "g5", minValues=51),
            "minValues",
            "Input should be less than or equal to 50, got 51",
        ),
        (req("kubernetes.io/arch", "In"), "values", "operator In needs at least one value"),
        (req("kubernetes.io/arch", "Exists", "amd64"), "values", "operator Exists takes no values"),
        (req("karpenter.k8s.aws/instance-cpu", "Gt", "many"), "values", "operator Gt takes exactly one whole number"),
        (
            req("kubernetes.io/arch", "Like", "x"),
            "operator",
            "Input should be 'In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt', 'Gte' or 'Lte', got 'Like'",
        ),
        (
            req("eksml.io/team", "In", "a b"),
            "values",
            "expected a label value of at most 63 letters, digits, '-', '_' or '.', got 'a b'",
        ),
        (
            req("node.kubernetes.io/instance-type", "NotIn", "g5xlarge"),
            "values",
            "'g5xlarge' is not an instance type like 'g5.xlarge'",
        ),
        (
            req("karpenter.k8s.aws/instance-category", "NotIn", "q"),
            "values",
            f"unknown instance category 'q'; expected one of {CATEGORIES}",
        ),
        (
            req("karpenter.k8s.aws/instance-gpu-name", "In", "a10"),
            "values",
            (
                f"unknown GPU name 'a10'; expected one of {GPU_NAMES} (add the facts of a newer family under "
                "karpenter.acceleratorFamilies)"
            ),
        ),
    ],
)
def test_mistakes_in_a_requirement_are_reported_with_their_key_path(requirement, path, message):
    assert problems(preset="gpu-inference", requirements=[requirement]) == {f"{P}.requirements[0].{path}": message}


@pytest.mark.refcheck
def test_requirements_with_crd_keys_custom_keys_and_min_values_pass_the_nodepool_crd():
    spec = pool(
        preset="gpu-training",
        gpuNames=["h100", "h200"],
        requirements=[
            req("karpenter.k8s.aws/instance-family", "In", "p5", "p5e", "p5en", minValues=2),
            req("karpenter.k8s.aws/capacity-reservation-type", "In", "capacity-block", "default"),
            req("karpenter.k8s.aws/placement-group-id", "Exists"),
            req("karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz", "Gte", "3000"),
            req("topology.k8s.aws/zone-id", "In", "usw2-az1"),
            req("eksml.io/team", "In", "vision"),
        ],
    )
    objects = [render_nodeclass("gpu-training", node_class(preset="gpu-training"), CONTEXT), render_nodepool("p", spec)]
    assert crd_findings(objects) == []
