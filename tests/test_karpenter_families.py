"""Instance families as data: accelerated families recognised by the shape and category of their name, facts a stack
adds for families the pinned table lacks, CPU families by shape, and families a pool's other fields keep out."""

from __future__ import annotations

from typing import Any

import pytest

from components.instances import accelerators
from components.instances.families import EC2_FAMILIES, architecture_of, generation_of, type_problem
from components.karpenter import efa
from components.karpenter.presets import NODE_POOL_PRESETS
from components.karpenter.render import requirements
from components.scheduling import GPU_RESOURCE, GPU_TAINT
from tests.karpenter_support import P, all_config_problems, config_problems, karpenter_config, pool, problems, req

CATEGORIES = "a, c, d, g, gr, h, hpc, i, im, inf, is, m, p, r, t, trn, x, z"
ACCELERATED_NEWER = "a newer accelerated family is added with its facts under karpenter.acceleratorFamilies"
CPU_NEWER = "the list is the pinned Karpenter release's instance data"
GPU_POOL: dict[str, Any] = {"nodeClass": "gpu", "taints": [GPU_TAINT.as_dict()], "limits": {GPU_RESOURCE: "8"}}


@pytest.mark.parametrize("family", ["p6-b200", "g7e", "g5g", "p3", "p3dn", "p6e-gb200", "p6-b300", "g6f", "gr6"])
def test_accelerated_families_ec2_offers_are_recognised_whether_or_not_the_facts_table_knows_them(family):
    spec = pool(**GPU_POOL, instanceFamilies=[family], architectures=["amd64", "arm64"])
    assert spec.accelerator == "nvidia"
    assert {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": [family]} in requirements(spec)
    # ...and so they are GPU pools, tainted and capped, like any other.
    assert f"{P}.taints" in problems(
        nodeClass="gpu", instanceFamilies=[family], architectures=["amd64", "arm64"], limits={GPU_RESOURCE: "8"}
    )


def test_the_pinned_table_has_the_families_presets_and_docs_use():
    assert {"g4dn", "g5", "g6", "g6e", "p4d", "p5", "p5en", "p6-b200", "inf2", "trn1", "trn2"} <= set(
        accelerators.ACCELERATED_FAMILIES
    )
    assert accelerators.ACCELERATED_FAMILIES["g5g"].architecture == "arm64"
    assert accelerators.ACCELERATED_FAMILIES["p6-b200"].gpu_name == "b200"


def test_every_family_and_size_the_facts_presets_and_efa_layouts_name_is_one_ec2_offers():
    named = {
        f"{family.family}.{size}" for family in accelerators.ACCELERATED_FAMILIES.values() for size in family.devices
    }
    named |= set(efa.NETWORK_CARDS)
    for preset in NODE_POOL_PRESETS.values():
        families, sizes = preset.get("instanceFamilies", []), preset.get("instanceSizes", [])
        named |= {f"{family}.{size}" for family in families for size in sizes or EC2_FAMILIES[family]}
    assert len(named) > 50
    assert {t for t in named if type_problem(t)} == set()


def _unknown(family: str, nearest: str, newer: str = ACCELERATED_NEWER) -> str:
    return (
        f"'{family}' is not an instance family EC2 offers (components/instances/ec2_families.yaml, as of 2026-08-20); "
        f"nearest known: {nearest} ({newer})"
    )


@pytest.mark.parametrize(
    ("family", "message"),
    [
        ("g5dn", _unknown("g5dn", "g4dn, g5, g5g")),
        ("p9", _unknown("p9", "p5, p3, p2")),
        ("g6ee", _unknown("g6ee", "g6e, g6, g7e")),
        ("g8", _unknown("g8", "g7, g6, g5")),
        ("m7ii", _unknown("m7ii", "m7i, m8i, m7g", CPU_NEWER)),
        ("r5dd", _unknown("r5dd", "r5d, r5dn, r5ad", CPU_NEWER)),
        ("m7i-max", _unknown("m7i-max", "m7i-flex, m7i, m7a", CPU_NEWER)),
        (
            "zz9",
            (
                "'zz9' is not an instance family EC2 offers (components/instances/ec2_families.yaml, as of "
                f"2026-08-20) ({CPU_NEWER})"
            ),
        ),
        (
            "dl1",
            "'dl1' carries Gaudi accelerators, which this platform neither taints, caps nor runs a device plugin for",
        ),
        (
            "mac2",
            (
                "'mac2' is in the instance category 'mac', which this platform's nodes do not run on; expected one "
                f"of {CATEGORIES}"
            ),
        ),
    ],
)
def test_families_ec2_does_not_offer_are_refused_with_the_nearest_known_ones(family, message):
    fields: dict[str, Any] = {"preset": "cpu-general", "instanceCategories": [], "generationAbove": None}
    assert problems(**fields, instanceFamilies=[family])[f"{P}.instanceFamilies"] == message
    found = problems(**fields, requirements=[req("karpenter.k8s.aws/instance-family", "In", family)])
    assert found[f"{P}.requirements[0].values"] == message


def test_instance_types_and_sizes_ec2_does_not_offer_are_refused():
    fields = {
        "preset": "gpu-inference",
        "instanceSizes": ["xlarge", "huge"],
        "requirements": [req("node.kubernetes.io/instance-type", "NotIn", "g5.3xlarge", "g5dn.xlarge")],
    }
    found = all_config_problems({"nodePools": {"p": fields}})
    assert found == [
        (
            f"{P}.instanceSizes",
            "'huge' is not an instance size of any family EC2 offers",
        ),
        (
            f"{P}.requirements[0].values",
            (
                "'g5.3xlarge' is not an instance type EC2 offers: g5 comes in xlarge, 2xlarge, 4xlarge, 8xlarge, "
                "12xlarge, 16xlarge, 24xlarge, 48xlarge"
            ),
        ),
        (f"{P}.requirements[0].values", _unknown("g5dn", "g4dn, g5, g5g")),
    ]
    assert problems(preset="gpu-training", instanceFamilies=["p5"], instanceSizes=["xlarge"]) == {
        f"{P}.instanceSizes": (
            "'xlarge' is a size none of instanceFamilies ['p5'] comes in: the pool can never launch it"
        )
    }


def test_a_family_ec2_does_not_list_yet_is_added_with_its_facts():
    facts = {"gpuName": "x100", "memoryGib": 192, "devices": {"48xlarge": 8}}
    config = karpenter_config(
        {"acceleratorFamilies": {"p9": facts}, "nodePools": {"p": {**GPU_POOL, "instanceFamilies": ["p9"]}}}
    )
    assert config.node_pools["p"].instance_families == ("p9",)
    assert problems(**GPU_POOL, instanceFamilies=["p9"]) == {f"{P}.instanceFamilies": _unknown("p9", "p5, p3, p2")}


def test_current_cpu_families_are_accepted():
    families = [
        "m7i-flex",
        "c6gn",
        "x2iedn",
        "is4gen",
        "m8azn",
        "c8id",
        "r7iz",
        "t4g",
        "z1d",
        "hpc7g",
        "i7ie",
        "m5zn",
        "c5ad",
        "x8aedz",
    ]
    spec = pool(preset="cpu-general", instanceCategories=[], generationAbove=None, instanceFamilies=families)
    assert spec.accelerator is None
    assert {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": families} in requirements(spec)


@pytest.mark.parametrize(
    ("family", "generation", "arch"),
    [
        ("p6-b200", 6, "amd64"),
        ("p6e-gb200", 6, "arm64"),
        ("g5g", 5, "arm64"),
        ("c7gn", 7, "arm64"),
        ("m7i", 7, "amd64"),
        ("trn1n", 1, "amd64"),
        ("a1", 1, "arm64"),
    ],
)
def test_generation_and_architecture_come_from_the_name(family, generation, arch):
    assert (generation_of(family), architecture_of(family)) == (generation, arch)


# ----------------------------------------------------------------------------------------- facts from config

G7E = {
    "gpuName": "rtx-pro-6000",
    "memoryGib": 96,
    "devices": {"2xlarge": 1, "12xlarge": 2, "24xlarge": 4, "48xlarge": 8},
}


def test_a_stack_adds_facts_for_a_family_the_table_does_not_know():
    config = karpenter_config(
        {
            "acceleratorFamilies": {"g7e": G7E},
            "nodePools": {"p": {**GPU_POOL, "instanceFamilies": ["g7e"], "gpuNames": ["rtx-pro-6000"]}},
        }
    )
    assert config.added_families["g7e"].devices == G7E["devices"]
    assert config.node_pools["p"].gpu_names == ("rtx-pro-6000",)
    # Without the facts the GPU name is unknown, and a typo of it would launch nothing.
    found = config_problems(
        {"nodePools": {"p": {**GPU_POOL, "instanceFamilies": ["g7e"], "gpuNames": ["rtx-pro-6000"]}}}
    )
    assert found[f"{P}.gpuNames"].startswith("unknown value 'rtx-pro-6000'; expected one of a100")
    # Outside the config being validated, only the pinned table is known.
    assert "rtx-pro-6000" not in accelerators.nvidia_gpu_names()


def test_gpu_names_must_agree_with_the_families_whose_facts_are_known():
    found = config_problems(
        {
            "acceleratorFamilies": {"g7e": G7E},
            "nodePools": {"p": {**GPU_POOL, "instanceFamilies": ["g7e", "g6"], "gpuNames": ["rtx-pro-6000"]}},
        }
    )
    assert found == {f"{P}.instanceFamilies": "['g6'] have none of the GPUs in gpuNames ['rtx-pro-6000']"}


@pytest.mark.parametrize(
    ("name", "facts", "message"),
    [
        ("g5", G7E, "'g5' is in the pinned table (components/instances/accelerators.py); remove it here"),
        ("m9i", G7E, "'m9i' is not an accelerated family name (category g, gr, p, inf or trn, like 'g7e')"),
        (
            "g7e",
            {k: v for k, v in G7E.items() if k != "gpuName"},
            "an NVIDIA family needs gpuName: the value of karpenter.k8s.aws/instance-gpu-name on its instances",
        ),
        ("trn3", G7E, "a Neuron family has no GPU name; leave out gpuName"),
    ],
)
def test_added_facts_that_contradict_the_table_or_the_name_are_refused(name, facts, message):
    assert config_problems({"acceleratorFamilies": {name: facts}}) == {f"karpenter.acceleratorFamilies.{name}": message}


def test_added_facts_are_checked_field_by_field():
    found = config_problems({"acceleratorFamilies": {"g7e": {"gpuName": "RTX", "memoryGib": 0, "devices": {}}}})
    assert set(found) == {
        "karpenter.acceleratorFamilies.g7e.gpuName",
        "karpenter.acceleratorFamilies.g7e.memoryGib",
        "karpenter.acceleratorFamilies.g7e.devices",
    }


# ------------------------------------------------------------------------------------------- contradictions


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"instanceFamilies": ["g4dn"], "generationAbove": 4},
            "'g4dn' is generation 4, which generationAbove 4 excludes: the pool can never launch it",
        ),
        (
            {"instanceFamilies": ["g5g"]},
            "'g5g' runs on arm64, which architectures ['amd64'] excludes: the pool can never launch it",
        ),
        (
            {"instanceFamilies": ["g6"], "architectures": ["arm64"]},
            "'g6' runs on amd64, which architectures ['arm64'] excludes: the pool can never launch it",
        ),
        (
            {"instanceFamilies": ["p5"], "instanceCategories": ["g"]},
            "'p5' is in category 'p', which instanceCategories ['g'] leaves out: the pool can never launch it",
        ),
        (
            {"instanceFamilies": ["g5"], "requirements": [req("karpenter.k8s.aws/instance-generation", "Gte", "6")]},
            (
                "'g5' is generation 5, which the requirement karpenter.k8s.aws/instance-generation Gte ['6'] "
                "excludes: the pool can never launch it"
            ),
        ),
        (
            {"instanceFamilies": ["g5"], "requirements": [req("kubernetes.io/arch", "In", "arm64")]},
            (
                "'g5' runs on amd64, which the requirement kubernetes.io/arch In ['arm64'] excludes: the pool can "
                "never launch it"
            ),
        ),
        (
            {
                "instanceFamilies": ["g5", "g6"],
                "requirements": [req("karpenter.k8s.aws/instance-family", "NotIn", "g6")],
            },
            (
                "'g6' is excluded by the requirement karpenter.k8s.aws/instance-family NotIn ['g6']: the pool can "
                "never launch it"
            ),
        ),
    ],
)
def test_families_the_pools_other_fields_keep_out_are_reported(fields, message):
    assert problems(**{**GPU_POOL, **fields}) == {f"{P}.instanceFamilies": message}


def test_instance_types_whose_gpus_gpu_names_leave_out_are_reported():
    found = problems(
        preset="gpu-training",
        requirements=[req("node.kubernetes.io/instance-type", "In", "p5.48xlarge", "p6-b200.48xlarge")],
    )
    assert found == {
        f"{P}.requirements[0]": (
            "'p6-b200.48xlarge' has b200 GPUs, which gpuNames ['a100', 'h100'] leaves out: the pool can never launch it"
        )
    }


def test_a_graviton_and_x86_pool_with_families_of_both_is_consistent():
    spec = pool(preset="cpu-general", instanceCategories=[], instanceFamilies=["m7g", "m7i", "c7g", "c7i"])
    assert spec.architectures == ("amd64", "arm64")
