"""Property tests over the pure renderers: IAM documents for any partition, region and cluster, alerts for any set of
accelerator pools, and config errors for an unknown key at any depth of either stack file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import promql_parser
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.cluster.config import CLUSTER_NAME
from components.config import ConfigError
from components.identity.documents import irsa_trust_policy, node_trust_policy
from components.identity.team_policy import team_s3_policy
from components.ingress.iam import ControllerScope as LbControllerScope
from components.ingress.iam import controller_policy as lb_controller_policy
from components.karpenter.iam import ControllerScope, queue_policy
from components.karpenter.iam import controller_policy as karpenter_policy
from components.kubeflow.teams import Team
from components.observability.config import AlertThresholds
from components.observability.render import GpuPool, alert_rules
from components.platform.parse import parse_config
from components.scheduling import ACCELERATOR_RESOURCES
from components.storage.render import (
    bucket_key_policy,
    data_repository_policy,
    fsx_csi_controller_policy,
    tls_only_bucket_policy,
)

from .conftest import PROJECT, stack_config

# ------------------------------------------------------------------------------------------------ IAM documents

#: What AWS calls each partition's domain, and region names as the config accepts them (`aws:region`).
DNS_SUFFIX = {"aws": "amazonaws.com", "aws-cn": "amazonaws.com.cn", "aws-us-gov": "amazonaws.com"}
REGIONS = {
    "aws": st.from_regex(r"(us|eu|ap|sa|ca|me|af|il|mx)-[a-z]{4,9}-[1-9]", fullmatch=True),
    "aws-cn": st.from_regex(r"cn-[a-z]{4,9}-[1-9]", fullmatch=True),
    "aws-us-gov": st.from_regex(r"us-gov-[a-z]{4,9}-[1-9]", fullmatch=True),
}
places = st.sampled_from(sorted(REGIONS)).flatmap(lambda partition: st.tuples(st.just(partition), REGIONS[partition]))
clusters = st.from_regex(CLUSTER_NAME.pattern.strip("^$"), fullmatch=True)
accounts = st.from_regex(r"[0-9]{12}", fullmatch=True)

#: Every action with a wildcard, by document: the account administering the bucket key through IAM (KMS's default
#: key policy), KMS's ReEncryptFrom/ReEncryptTo for FSx, and the denials of plain HTTP. Nothing else.
WILDCARD_ACTIONS = {
    ("bucket-key", "Allow", "kms:*"),
    ("bucket-key", "Allow", "kms:ReEncrypt*"),
    ("bucket-tls", "Deny", "s3:*"),
    ("karpenter-queue", "Deny", "sqs:*"),
}


def documents(partition: str, region: str, account: str, cluster: str) -> dict[str, dict[str, Any]]:
    """Every IAM document the package renders, for one partition, region, account and cluster (JSON round-tripped,
    as AWS receives them)."""
    suffix = DNS_SUFFIX[partition]
    scope = ControllerScope(
        partition=partition,
        region=region,
        account_id=account,
        cluster_name=cluster,
        node_role_arn=f"arn:{partition}:iam::{account}:role/{cluster}-node",
        queue_arn=f"arn:{partition}:sqs:{region}:{account}:{cluster}",
    )
    bucket = f"{cluster}-data"
    bucket_arn = f"arn:{partition}:s3:::{bucket}"
    key_arn = f"arn:{partition}:kms:{region}:{account}:key/6f1c2a9e-0b7d-4f3e-9a51-2c8d7e4b1a30"
    issuer = f"oidc.eks.{region}.{suffix}/id/0123456789ABCDEF"
    team = Team(name="vision", owner="lead@example.org", gpu_ceiling=4, s3_prefix="teams/vision")
    rendered = {
        "karpenter-controller": karpenter_policy(scope),
        "karpenter-queue": queue_policy(scope.queue_arn),
        "lb-controller": lb_controller_policy(
            LbControllerScope(
                partition=partition,
                region=region,
                account_id=account,
                vpc_id="vpc-0123456789abcdef0",
                cluster_name=cluster,
                waf=True,  # every statement it can grant
                shield=True,
            )
        ),
        "bucket-tls": tls_only_bucket_policy(bucket_arn),
        "bucket-key": bucket_key_policy(
            partition=partition, account_id=account, region=region, fsx_bucket_arns=(bucket_arn,)
        ),
        "fsx-data-repository": data_repository_policy(partition=partition, bucket_arn=bucket_arn, prefix="training/"),
        "fsx-csi-controller": fsx_csi_controller_policy(partition=partition, cluster_name=cluster),
        "irsa-trust": irsa_trust_policy(
            oidc_provider_arn=f"arn:{partition}:iam::{account}:oidc-provider/{issuer}",
            oidc_issuer=f"https://{issuer}",
            namespace="kube-system",
            service_account="aws-node",
        ),
        "node-trust": node_trust_policy(partition),
        "team-s3": team_s3_policy(
            partition=partition, region=region, bucket=bucket, prefix="vision", kms_key_arn=key_arn
        ),
        "kubeflow-team-s3": team_s3_policy(
            partition=partition, region=region, bucket=bucket, prefix=team.s3_prefix, kms_key_arn=key_arn
        ),
    }
    return json.loads(json.dumps(rendered))


def statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    found = document["Statement"]
    return found if isinstance(found, list) else [found]


def listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def strings(value: Any) -> Iterator[tuple[str, str]]:
    """Every (key, string) below a document value; list items keep the key that holds them."""
    if isinstance(value, dict):
        for key, item in value.items():
            for inner_key, text in strings(item):
                yield inner_key or key, text
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, str):
        yield "", value


@settings(max_examples=60, deadline=None)
@given(place=places, cluster=clusters, account=accounts)
def test_iam_documents_grant_no_wildcard_beyond_the_designed_ones_and_stay_in_their_partition(place, cluster, account):
    partition, region = place
    rendered = documents(partition, region, account, cluster)
    wildcards = set()
    for name, document in rendered.items():
        for statement in statements(document):
            assert not {"NotAction", "NotResource", "NotPrincipal"} & statement.keys(), (name, statement)
            wildcards |= {(name, statement["Effect"], a) for a in listed(statement["Action"]) if "*" in a}
            for key, text in strings(statement):
                if text.startswith("arn:"):
                    _, arn_partition, _, arn_region, arn_account, _ = text.split(":", 5)
                    assert arn_partition == partition, (name, text)
                    assert arn_region in ("", "*", region), (name, text)
                    assert arn_account in ("", "*", "aws", account), (name, text)
                if key == "kms:ViaService":
                    assert text == f"s3.{region}.{DNS_SUFFIX[partition]}", (name, text)
    assert wildcards == WILDCARD_ACTIONS
    # The administration of the key is the account's alone (the KMS default, which lets IAM policies grant use).
    admin = next(s for s in statements(rendered["bucket-key"]) if s["Action"] == "kms:*")
    assert admin["Principal"] == {"AWS": f"arn:{partition}:iam::{account}:root"}
    # EKS nodes: EC2 by the partition's own service principal (ec2.amazonaws.com.cn in China).
    assert [s["Principal"] for s in statements(rendered["node-trust"])] == [{"Service": f"ec2.{DNS_SUFFIX[partition]}"}]


# ----------------------------------------------------------------------------------------------------- alerts

#: NodePool names as stack config accepts them (`karpenter.nodePools.<name>`).
pool_names = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", fullmatch=True)
ceilings = st.dictionaries(st.sampled_from(ACCELERATOR_RESOURCES), st.integers(min_value=1, max_value=4096), min_size=1)


@settings(max_examples=60, deadline=None)
@given(pools=st.dictionaries(pool_names, ceilings, max_size=8), ratio=st.floats(min_value=0.01, max_value=1.0))
def test_every_accelerator_ceiling_gets_exactly_one_near_limit_alert_at_its_own_limit(pools, ratio):
    # As the stack derives them: one per ceiling of each pool.
    limited = [GpuPool(name, n, resource) for name, limits in sorted(pools.items()) for resource, n in limits.items()]
    rendered = alert_rules("p", "monitoring", limited, AlertThresholds(gpu_limit_ratio=ratio))
    near = [r for g in rendered["spec"]["groups"] for r in g["rules"] if "NearLimit" in r["alert"]]
    assert len(near) == len(limited) == len({r["alert"] for r in near})
    for pool in limited:
        selector = f'nodepool="{pool.name}", resource_type="{pool.resource}"'
        (rule,) = [r for r in near if selector in r["expr"]]
        promql_parser.parse(rule["expr"])
        assert rule["expr"].endswith(f"> {ratio}")
        assert f"NodePool {pool.name} uses over" in rule["annotations"]["summary"]
        assert f"of its {pool.accelerator_limit} " in rule["annotations"]["summary"]


# ----------------------------------------------------------------------------------------------------- config

#: Mappings keyed by name (a new key is a new entry, not an unknown key) and free-form ones.
KEYED_BY_NAME = {
    *("adminPrincipals", "nodePools", "nodeClasses", "buckets", "limits", "labels", "teams", "tags"),
    *("connectors", "staticUsers", "contributors"),  # Kubeflow sign-in: by connector id, username, e-mail
    "teamStacks",  # the reserve for team stacks, by team name
}


def _places(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every model mapping in a config value (where an unknown key can be placed), list items included, as a path."""
    if isinstance(value, dict):
        if not path or path[-1] not in KEYED_BY_NAME:
            yield path
        for key, item in value.items():
            yield from _places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _places(item, (*path, index))


def _unknown_key_places() -> list[tuple[str, str | None, tuple[Any, ...]]]:
    """(stack, config key or None for the project's own top level, path below it) for both stack files."""
    found: list[tuple[str, str | None, tuple[Any, ...]]] = []
    for stack in ("dev", "prod"):
        found.append((stack, None, ()))
        for key, text in sorted(stack_config(stack).items()):
            if key.startswith(f"{PROJECT}:") and text[:1] == "{":
                found += [(stack, key, path) for path in _places(json.loads(text))]
    return found


def _dotted(parts: list[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


PLACES = _unknown_key_places()
PLACE_IDS = [f"{stack}:{_dotted([(key or PROJECT).split(':')[-1], *path])}" for stack, key, path in PLACES]


@pytest.mark.parametrize(("stack", "key", "path"), PLACES, ids=PLACE_IDS)
@settings(max_examples=5, deadline=None)
@given(unknown=st.from_regex(r"zz[a-z]{1,8}", fullmatch=True))
def test_an_unknown_key_at_any_depth_is_exactly_one_issue_naming_it(stack, key, path, unknown):
    raw = stack_config(stack)
    if key is None:
        raw[f"{PROJECT}:{unknown}"] = "x"
        expected = unknown
    else:
        value = json.loads(raw[key])
        target = value
        for part in path:
            target = target[part]
        target[unknown] = "x"
        raw[key] = json.dumps(value)
        expected = _dotted([key.split(":", 1)[1], *path, unknown])
    with pytest.raises(ConfigError) as refused:
        parse_config(raw, project=PROJECT, stack=stack)
    assert [issue.path for issue in refused.value.issues] == [expected], refused.value
    assert "unknown key" in refused.value.issues[0].message
