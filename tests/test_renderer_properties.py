"""Property tests over the pure renderers: IAM documents for any partition, region and cluster, alerts for any set of
GPU pools, and config errors for an unknown key at any depth."""

from __future__ import annotations

import json
from typing import Any, Iterator

from hypothesis import given, settings
from hypothesis import strategies as st

from components.config import ConfigError
from components.config.platform import parse_config
from components.ingress.iam import controller_policy as lb_controller_policy
from components.karpenter.iam import ControllerScope, queue_policy
from components.karpenter.iam import controller_policy as karpenter_policy
from components.observability.config import AlertThresholds
from components.observability.render import GpuPool, alert_rules
from components.storage.render import bucket_key_policy, data_repository_policy, fsx_csi_controller_policy

from .conftest import PROJECT, stack_config

PARTITIONS = {"aws": "us-west-2", "aws-cn": "cn-north-1", "aws-us-gov": "us-gov-west-1"}
names = st.from_regex(r"[a-z][a-z0-9-]{0,38}[a-z0-9]", fullmatch=True)
accounts = st.from_regex(r"[0-9]{12}", fullmatch=True)


def statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    found = document["Statement"]
    return found if isinstance(found, list) else [found]


def arns(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if value.startswith("arn:"):
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from arns(item)
    elif isinstance(value, list):
        for item in value:
            yield from arns(item)


def assert_scoped(document: dict[str, Any], partition: str) -> None:
    """No `*` action, and every ARN (resources and conditions) in the stack's partition."""
    for statement in statements(document):
        if statement.get("Effect") == "Deny":
            continue  # a Deny may name every action (the TLS-only statements do)
        actions = statement.get("Action", [])
        for action in [actions] if isinstance(actions, str) else actions:
            assert action != "*" and not action.endswith(":*"), action
        for arn in arns({k: v for k, v in statement.items() if k != "Principal"}):
            assert arn.split(":")[1] == partition, arn


@settings(max_examples=40, deadline=None)
@given(partition=st.sampled_from(sorted(PARTITIONS)), cluster=names, account=accounts)
def test_controller_and_storage_policies_grant_no_wildcard_action_and_stay_in_their_partition(partition, cluster, account):
    region = PARTITIONS[partition]
    scope = ControllerScope(
        partition=partition,
        region=region,
        account_id=account,
        cluster_name=cluster,
        node_role_arn=f"arn:{partition}:iam::{account}:role/node",
        queue_arn=f"arn:{partition}:sqs:{region}:{account}:q",
    )
    bucket = f"arn:{partition}:s3:::data-{account}"
    for document in (
        karpenter_policy(scope),
        queue_policy(scope.queue_arn),
        lb_controller_policy(partition),
        data_repository_policy(partition=partition, bucket_arn=bucket, prefix="training/"),
        fsx_csi_controller_policy(partition=partition, cluster_name=cluster),
    ):
        assert_scoped(json.loads(json.dumps(document)), partition)
    # A key policy's own administration goes to the account (the KMS default, which lets IAM grant use); FSx's
    # statement is scoped like any grant.
    key_policy = bucket_key_policy(partition=partition, account_id=account, region=region, fsx_bucket_arns=(bucket,))
    admin, fsx = statements(key_policy)
    assert admin["Action"] == "kms:*" and admin["Principal"] == {"AWS": f"arn:{partition}:iam::{account}:root"}
    assert_scoped({"Statement": [fsx]}, partition)


@settings(max_examples=40, deadline=None)
@given(pools=st.dictionaries(names, st.integers(min_value=1, max_value=512), max_size=8))
def test_every_gpu_pool_gets_exactly_one_near_limit_alert_at_its_own_limit(pools):
    rendered = alert_rules("p", "monitoring", [GpuPool(n, limit) for n, limit in sorted(pools.items())], AlertThresholds())
    near = [r for g in rendered["spec"]["groups"] for r in g["rules"] if r.get("alert", "").startswith("NodePoolGpuNearLimit")]
    assert len(near) == len(pools)
    for name, limit in pools.items():
        (rule,) = [r for r in near if f'nodepool="{name}"' in r["expr"]]
        assert f"NodePool {name} uses over" in rule["annotations"]["summary"]
        assert f"of its {limit} GPU limit" in rule["annotations"]["summary"]


#: Mappings keyed by name (a new key is a new entry, not an unknown key) and free-form ones.
KEYED_BY_NAME = {"adminPrincipals", "nodePools", "nodeClasses", "buckets", "limits", "labels", "teams", "tags"}


def _paths(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every model mapping in a config value (where an unknown key can be placed), as a key path."""
    if isinstance(value, dict):
        if not path or path[-1] not in KEYED_BY_NAME:
            yield path
        for key, item in value.items():
            yield from _paths(item, (*path, key))


def _mapping_paths() -> list[tuple[str, tuple[str, ...]]]:
    raw = stack_config("prod")
    return [
        (key, path)
        for key, text in sorted(raw.items())
        if key.startswith(f"{PROJECT}:") and text[:1] == "{"
        for path in _paths(json.loads(text))
    ]


@settings(max_examples=60, deadline=None)
@given(where=st.sampled_from(_mapping_paths()), unknown=st.from_regex(r"zz[a-z]{1,8}", fullmatch=True))
def test_an_unknown_key_at_any_depth_is_exactly_one_issue_with_its_path(where, unknown):
    key, path = where
    raw = stack_config("prod")
    value = json.loads(raw[key])
    target = value
    for part in path:
        target = target[part]
    target[unknown] = "x"
    raw[key] = json.dumps(value)
    try:
        parse_config(raw, project=PROJECT, stack="prod")
    except ConfigError as error:
        expected = ".".join([key.split(":", 1)[1], *path, unknown])
        mine = [issue for issue in error.issues if unknown in issue.path]
        assert [issue.path for issue in mine] == [expected]
        assert "unknown key" in mine[0].message
    else:
        raise AssertionError(f"{key} {path}: unknown key {unknown!r} was accepted")
