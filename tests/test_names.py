"""Names: fixed logical names, aliases that keep 0.1 stacks, and the provider's auto-name limits under mocks."""

from __future__ import annotations

import json
import re
import string
from typing import Any

import pulumi_aws as aws
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components import aws_names
from components.config.errors import ConfigError
from components.kubeflow.pipelines import LEFT_OUT, UNUSED_CREDENTIALS
from components.kubeflow.rbac import DROPPED_GRANTS
from components.platform.parse import parse_config
from components.storage.config import MAX_BUCKET_KEY
from components.tools.preview import mocks

from .conftest import DATA, PROJECT, run_stack, stack_config

#: config.py: `cluster.name` is a DNS-style name of 2 to 40 characters.
LONGEST_CLUSTER_NAME = 40


def with_cluster_name(stack: str, name: str) -> dict[str, Any]:
    cluster = json.loads(stack_config(stack)[f"{PROJECT}:cluster"])
    return {"cluster": {**cluster, "name": name}}


def dropped_on_purpose(urn: str, stack: str) -> bool:
    """Whether a URN is of an upstream grant the platform has since left out (`kubeflow.rbac.DROPPED_GRANTS`), or,
    in prod (whose Pipelines keep their artifacts on S3 since 0.2), of what S3 mode leaves out
    (`kubeflow.pipelines.LEFT_OUT`, and the credentials it has no use for)."""
    dropped = [(kind, name) for kind, name in DROPPED_GRANTS]
    if stack == "prod":
        dropped += [(kind, "-".join(p for p in (namespace, name) if p)) for kind, namespace, name in LEFT_OUT]
        unused = {f"::kubeflow-{c.replace('_', '-')}" for c in UNUSED_CREDENTIALS}
        if ":RandomPassword::" in urn and any(urn.endswith(u) for u in unused):
            return True
    # (logical names spell every character but letters, digits and dashes as a dash)
    return any(
        f":{kind}::" in urn and urn.endswith(f"-{kind.lower()}-{re.sub(r'[^a-z0-9-]', '-', name.lower())}")
        for kind, name in dropped
    )


def is_component(urn: str) -> bool:
    """Whether a URN names one of the package's components (its own type, the last of the chain, is `eksml:...`)."""
    return urn.split("::")[2].rsplit("$", 1)[-1].startswith("eksml:")


@pytest.mark.stack
@pytest.mark.parametrize("release", ["0.1", "0.2", "0.3"])
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_resource_of_an_earlier_release_is_kept_by_its_urn_or_an_alias(stack, release, request):
    """Renamed parts (0.1 to 0.2) and children moved to another component (the FSx file system, 0.2 to 0.3) carry
    aliases to their earlier URNs: `pulumi up` after the upgrade replaces nothing. The lists are each release's
    previewed URNs; components (which hold no state) may come and go."""
    inventory = request.getfixturevalue(stack)
    known = set()
    for resource in inventory.resources:
        known |= {resource.urn, *inventory.alias_urns(resource)}
    listed = (DATA / f"{stack}-urns-{release}.txt").read_text().split()
    before = {urn for urn in listed if not is_component(urn) and not dropped_on_purpose(urn, stack)}
    assert before
    assert before <= known, sorted(before - known)[:5]


def test_alias_expansion_follows_the_engine_rule_for_children(dev):
    """A child named `<parent>-x` inherits `<parent alias>-x`; this is what keeps the children of a renamed part."""
    role = dev.one("aws:iam/role:Role", "karpenter-controller-role")
    assert (
        "urn:pulumi:dev::eks-ml-platform::eksml:karpenter:Karpenter$eksml:iam:IrsaRole$aws:iam/role:Role::"
        "eks-ml-platform-dev-karpenter-controller-role"
    ) in dev.alias_urns(role)


@pytest.mark.stack
def test_logical_names_do_not_grow_with_the_cluster_name(dev):
    longest = run_stack("dev", with_cluster_name("dev", "c" * LONGEST_CLUSTER_NAME))
    assert sorted((r.type, r.name) for r in longest.resources) == sorted((r.type, r.name) for r in dev.resources)


_DNS = string.ascii_lowercase + string.digits


@pytest.mark.stack
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.builds(
        lambda first, middle, last: first + middle + last,
        st.sampled_from(string.ascii_lowercase),
        st.text(alphabet=_DNS + "-", min_size=LONGEST_CLUSTER_NAME - 2, max_size=LONGEST_CLUSTER_NAME - 2),
        st.sampled_from(_DNS),
    ),
    stack=st.sampled_from(["dev", "prod"]),
)
def test_the_longest_cluster_names_config_accepts_preview_under_the_providers_name_limits(name, stack):
    overrides = with_cluster_name(stack, name)
    parse_config(stack_config(stack, overrides), project=PROJECT, stack=stack)  # accepted by config...
    inventory = run_stack(stack, overrides)  # ...and by every auto-name limit the mocks apply
    assert inventory.one("aws:eks/cluster:Cluster").inputs["name"] == name


@pytest.mark.stack
def test_the_mocks_refuse_an_auto_name_past_the_providers_limit_as_pulumi_preview_does():
    def program():
        aws.cloudwatch.EventRule("x" * 57, event_pattern="{}")  # 57 + "-" + 7 hex = 65 > 64

    with pytest.raises(aws_names.NameTooLong, match=r"plus 7 random chars is longer than maximum length 64"):
        mocks.run(program, project="p", stack="s", region="us-west-2", config={})


@pytest.mark.stack
def test_the_mocks_refuse_a_name_the_provider_accepts_but_aws_refuses():
    def program():
        aws.eks.NodeGroup(
            "n" * 56,
            cluster_name="c",
            node_role_arn="arn:aws:iam::123456789012:role/r",
            subnet_ids=["subnet-1"],
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(desired_size=1, max_size=1, min_size=1),
        )

    with pytest.raises(aws_names.NameTooLong, match=r"AWS refuses more than 63 at create time"):
        mocks.run(program, project="p", stack="s", region="us-west-2", config={})


def test_an_explicit_name_is_checked_against_the_limit_too():
    with pytest.raises(aws_names.NameTooLong, match="longer than maximum length 64"):
        aws_names.checked_name("aws:iam/role:Role", "r", {"name": "r" * 65})
    assert aws_names.checked_name("aws:iam/role:Role", "r", {"name": "r" * 64}) == "r" * 64


def test_s3_auto_names_are_lowercase_and_a_prefix_leaves_room_for_its_unique_suffix():
    assert aws_names.auto_name("aws:s3/bucket:Bucket", "Storage-Data").startswith("storage-data-")
    with pytest.raises(aws_names.NameTooLong):
        aws_names.checked_name("aws:s3/bucket:Bucket", "b", {"bucketPrefix": "p" * 38})  # 38 + 26 > 63


@pytest.mark.stack
def test_the_longest_bucket_key_fits_its_auto_name_and_one_more_character_is_a_config_error():
    longest = "b" * MAX_BUCKET_KEY
    inventory = run_stack("dev", {"storage": {"buckets": {longest: {}}}, "kubeflow": {"enabled": False}})
    bucket = inventory.one("aws:s3/bucket:Bucket", f"storage-{longest}")
    assert len(bucket.outputs["bucket"]) == 63
    with pytest.raises(ConfigError, match=rf"storage.buckets: the key '{longest}b' is {MAX_BUCKET_KEY + 1} characters"):
        parse_config(stack_config("dev", {"storage": {"buckets": {longest + "b": {}}}}), project=PROJECT, stack="dev")


def _aws_class(type_: str):
    """The pulumi-aws resource class of a type token (`aws:ec2/vpc:Vpc` → pulumi_aws.ec2.Vpc)."""
    import importlib

    module, cls = type_.split(":")[1].split("/")[0], type_.rsplit(":", 1)[1]
    package = importlib.import_module("pulumi_aws" if module == "index" else f"pulumi_aws.{module}")
    return getattr(package, cls)


@pytest.mark.stack
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_aws_type_the_program_creates_with_a_name_input_has_its_naming_rule(stack, request):
    """pulumi-aws auto-names every `name` input (and the few named otherwise); an AWS type the program creates that
    takes one must be in the table, or the mocks would not check its limit."""
    import inspect

    named = set()
    for type_ in {r.type for r in request.getfixturevalue(stack).resources if r.type.startswith("aws:")}:
        parameters = inspect.signature(_aws_class(type_)._internal_init).parameters
        if "name" in parameters or any(p.endswith("name_prefix") or p == "bucket_prefix" for p in parameters):
            named.add(type_)
    assert named
    assert named <= set(aws_names.NAME_RULES), sorted(named - set(aws_names.NAME_RULES))


@pytest.mark.stack
@pytest.mark.render
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_roles_a_0_3_stack_holds_as_irsa_roles_are_kept_with_every_child(stack, request):
    """IrsaRole became WorkloadRole (0.4): the component carries an alias to its old type token, and each child
    inherits it from its parent (the engine's rule, `Inventory.alias_urns`), so `pulumi up` replaces no role,
    policy or association, and the component itself is matched too."""
    inventory = request.getfixturevalue(stack)
    known = set()
    for resource in inventory.resources:
        known |= {resource.urn, *inventory.alias_urns(resource)}
    before = {urn for urn in (DATA / f"{stack}-urns-0.3.txt").read_text().split() if "eksml:iam:IrsaRole" in urn}
    assert any(urn.endswith("eksml:iam:IrsaRole::karpenter-controller") for urn in before)
    assert any("$aws:iam/role:Role::" in urn for urn in before)
    assert before <= known, sorted(before - known)[:5]
