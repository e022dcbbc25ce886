"""A Kubeflow team's Neuron share on the platform's Neuron pools: `kubeflow.teams.<team>.neuronQuota` devices, held
by its Profile's quota (Kueue leaves Neuron to it: `kueue.values.EXCLUDED_RESOURCE_PREFIXES`), and all teams'
together within the devices the Neuron pools launch, so no team's share waits on another's pods."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from components.config.errors import ConfigError
from components.kubeflow.config import settings
from components.kubeflow.teams import manifests
from components.platform.parse import parse_config
from components.scheduling import NEURON_TAINT
from tests.conftest import REPO, stack_config

PROJECT = "eks-ml-platform"
DEV = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())["config"]
NEURON_POOL = {"preset": "neuron", "nodeClass": "gpu"}


def dev(neuron_quotas: dict[str, int], pool_limits: dict[str, str] | None, pool: dict[str, Any] = NEURON_POOL) -> Any:
    """Dev with a Neuron pool (`pool`, the preset by default) capped as given (None: no Neuron pool) and a second
    Kubeflow team, each team with the Neuron quota given."""
    karpenter = copy.deepcopy(DEV[f"{PROJECT}:karpenter"])
    if pool_limits is not None:
        karpenter["nodePools"]["inf"] = {**pool, "limits": pool_limits}
    kubeflow = copy.deepcopy(DEV[f"{PROJECT}:kubeflow"])
    teams = kubeflow["teams"]
    teams["speech"] = {"owner": "speech-lead@example.org", "s3Prefix": "teams/speech"}
    for team, quota in neuron_quotas.items():
        teams[team]["neuronQuota"] = quota
    raw = stack_config("dev", {"karpenter": karpenter, "kubeflow": kubeflow})
    return parse_config(raw, project=PROJECT, stack="dev")


def refused(*args: Any) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        dev(*args)
    return {issue.path: issue.message for issue in caught.value.issues}


def neuron_quota(config: Any, team: str) -> dict[str, str]:
    facts = settings(config.kubeflow, storage_class="gp3", gpu_node_pools=(), gpu_scheduler=None, queueing=True)
    (profile,) = [o for t in facts.teams if t.name == team for o in manifests(t) if o["kind"] == "Profile"]
    return {k: v for k, v in profile["spec"]["resourceQuotaSpec"]["hard"].items() if "neuron" in k}


def test_a_teams_neuron_quota_is_its_profiles_quota_on_devices():
    config = dev({"ml-research": 6, "speech": 2}, {"aws.amazon.com/neuron": "8"})
    assert neuron_quota(config, "ml-research") == {
        "requests.aws.amazon.com/neuron": "6",
        "requests.aws.amazon.com/neurondevice": "6",  # the devices' older name, the same devices
        "requests.aws.amazon.com/neuroncore": "0",  # whole devices only: a core quota would count them twice
    }
    assert neuron_quota(config, "speech")["requests.aws.amazon.com/neuron"] == "2"


def test_a_team_without_a_neuron_quota_gets_none_of_the_pools():
    config = dev({"ml-research": 4}, {"aws.amazon.com/neuron": "8"})
    assert set(neuron_quota(config, "speech").values()) == {"0"}


def test_the_teams_neuron_quotas_together_may_not_pass_what_the_neuron_pools_launch():
    problems = refused({"ml-research": 6, "speech": 3}, {"aws.amazon.com/neuron": "8"})
    message = (
        "the teams' Neuron quotas (kubeflow.teams.ml-research.neuronQuota 6 + kubeflow.teams.speech.neuronQuota 3 "
        "= 9) pass the Neuron devices the NodePools may launch (8; inf: 8; a pool counts by its "
        "`aws.amazon.com/neuron` limit); lower a quota or raise a Neuron pool's `limits.aws.amazon.com/neuron`"
    )
    assert problems == {
        "kubeflow.teams.ml-research.neuronQuota": message,
        "kubeflow.teams.speech.neuronQuota": message,
    }


#: A Neuron pool of its own making (no preset, so no device limit of the preset's): capped on cores alone.
CORES_ONLY = {"nodeClass": "gpu", "instanceFamilies": ["inf2"], "taints": [NEURON_TAINT.as_dict()]}


@pytest.mark.parametrize(
    ("pool_limits", "launched"),
    [(None, "no NodePool launches Neuron"), ({"aws.amazon.com/neuroncore": "32"}, "inf: 0")],
)
def test_a_neuron_quota_needs_a_neuron_pool_capped_on_devices(pool_limits: dict[str, str] | None, launched: str):
    (message,) = refused({"speech": 1}, pool_limits, CORES_ONLY).values()
    assert f"(0; {launched};" in message
