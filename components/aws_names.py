"""How pulumi-aws names what it creates, and the limits AWS puts on those names.

pulumi-aws auto-names a resource `<logical name>-<7 random hex>` when its name is not given, and refuses (in the
provider's Check, so already in `pulumi preview`) a name whose length passes the type's maximum. The offline preview
runs under mocks, which skip the provider; the mocks apply these rules so the preview fails where the real one would.
Config checks use the same table for names that derive from configurable keys.
"""

from __future__ import annotations

import builtins
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

#: An AWS region's name in the partitions the package supports (us-west-2, ap-southeast-4, us-gov-west-1,
#: cn-north-1): stack config, the cost command's `--region` and Amazon Managed Prometheus hosts are read with it.
REGION_PATTERN = r"(?:us|eu|ap|sa|ca|me|af|il|mx|cn|us-gov)-[a-z]+-\d"
REGION = re.compile(REGION_PATTERN)

#: pulumi-terraform-bridge's auto-name suffix: a separator and 7 random hex characters.
RANDOM_SUFFIX_LENGTH = 7
SEPARATOR = "-"
#: Terraform's `name_prefix` appends a 26-character unique id (id.PrefixedUniqueId: a timestamp and a counter).
PREFIX_SUFFIX_LENGTH = 26

_OVERRIDE = "pulumi-aws provider/resource_overrides.go: tfbridge.AutoName"
_DEFAULT = 'pulumi-aws provider/autonaming.go: every `name` input gets tfbridge.AutoName("name", 255, "-")'
_IAM = "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html"


@dataclass(frozen=True)
class NameRule:
    """How one resource type is named.

    `provider_max` is what pulumi-aws checks when it auto-names (a longer name fails `pulumi preview`); `aws_max` is
    what the AWS API accepts (a longer name passes the provider's check, then fails `pulumi up`). Both are enforced.
    """

    property: str
    provider_max: int
    aws_max: int
    provider_source: str
    aws_source: str
    lowercase: bool = False
    #: The property that takes a prefix instead of a whole name (`namePrefix`), when the type has one.
    prefix_property: str | None = None

    @builtins.property  # the field above is named `property`
    def max_length(self) -> int:
        return min(self.provider_max, self.aws_max)


#: Every auto-named AWS type the platform creates or may create.
NAME_RULES: Mapping[str, NameRule] = MappingProxyType(
    {
        "aws:iam/role:Role": NameRule(
            "name", 64, 64, f'{_OVERRIDE}("name", 64)', f"{_IAM} (role name 64)", prefix_property="namePrefix"
        ),
        "aws:iam/policy:Policy": NameRule(
            "name", 255, 128, _DEFAULT, f"{_IAM} (managed policy name 128)", prefix_property="namePrefix"
        ),
        "aws:iam/rolePolicy:RolePolicy": NameRule(
            "name", 255, 128, _DEFAULT, f"{_IAM} (inline policy name 128)", prefix_property="namePrefix"
        ),
        "aws:iam/instanceProfile:InstanceProfile": NameRule(
            "name", 255, 128, _DEFAULT, f"{_IAM} (instance profile name 128)", prefix_property="namePrefix"
        ),
        "aws:cloudwatch/eventRule:EventRule": NameRule(
            "name",
            64,
            64,
            f'{_OVERRIDE}("name", 64)',
            "https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutRule.html (Name 1-64)",
            prefix_property="namePrefix",
        ),
        "aws:cloudwatch/eventTarget:EventTarget": NameRule(
            "targetId",
            255,
            64,
            f'{_OVERRIDE}("targetId", 255)',
            "https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_Target.html (Id 1-64)",
        ),
        "aws:sqs/queue:Queue": NameRule(
            "name",
            80,
            80,
            f'{_OVERRIDE}WithCustomOptions("name", Maxlen 80)',
            (
                "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html "
                "(QueueName 1-80)"
            ),
            prefix_property="namePrefix",
        ),
        "aws:s3/bucket:Bucket": NameRule(
            "bucket",
            63,
            63,
            f'{_OVERRIDE}Transform("bucket", 63, strings.ToLower)',
            "https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html (3-63, lowercase)",
            lowercase=True,
            prefix_property="bucketPrefix",
        ),
        "aws:eks/nodeGroup:NodeGroup": NameRule(
            "nodeGroupName",
            255,
            63,
            f'{_OVERRIDE}("nodeGroupName", 255)',
            "https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateNodegroup.html (nodegroupName 1-63)",
            prefix_property="nodeGroupNamePrefix",
        ),
        "aws:ec2/launchTemplate:LaunchTemplate": NameRule(
            "name",
            255,
            128,
            _DEFAULT,
            "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateLaunchTemplate.html (3-128)",
            prefix_property="namePrefix",
        ),
        "aws:ec2/securityGroup:SecurityGroup": NameRule(
            "name",
            255,
            255,
            _DEFAULT,
            "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSecurityGroup.html (GroupName up to 255)",
            prefix_property="namePrefix",
        ),
        "aws:lb/loadBalancer:LoadBalancer": NameRule(
            "name",
            255,
            32,
            _DEFAULT,
            (
                "https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html "
                "(Name up to 32)"
            ),
            prefix_property="namePrefix",
        ),
        "aws:lb/targetGroup:TargetGroup": NameRule(
            "name",
            32,
            32,
            'pulumi-aws provider/aliases.go: tfbridge.AutoName("name", 32)',
            (
                "https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateTargetGroup.html "
                "(Name up to 32)"
            ),
            prefix_property="namePrefix",
        ),
        "aws:cloudwatch/logGroup:LogGroup": NameRule(
            "name",
            255,
            512,
            _DEFAULT,
            "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateLogGroup.html (1-512)",
            prefix_property="namePrefix",
        ),
        "aws:eks/cluster:Cluster": NameRule(
            "name",
            255,
            100,
            _DEFAULT,
            "https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html (name 1-100)",
        ),
    }
)


class NameTooLong(ValueError):
    """A name the provider or AWS would refuse for its length."""


def random_suffix(logical_name: str, *, seed: str = "") -> str:
    """A deterministic stand-in for the provider's 7 random hex characters."""
    return hashlib.sha256(f"{seed}/{logical_name}".encode()).hexdigest()[:RANDOM_SUFFIX_LENGTH]


def _too_long(type_: str, rule: NameRule, name: str, *, what: str) -> NameTooLong | None:
    if len(name) > rule.provider_max:
        # The bridge's own wording (pulumi-terraform-bridge: "could not make instance of ..."), seen in
        # `pulumi preview`.
        return NameTooLong(
            f"could not make instance of '{type_}': {what} is longer than maximum length {rule.provider_max} "
            f"({rule.provider_source})"
        )
    if len(name) > rule.aws_max:
        return NameTooLong(
            f"{type_}: {what} is {len(name)} characters long, and AWS refuses more than {rule.aws_max} at create time, "
            f"so `pulumi up` fails after `pulumi preview` passes ({rule.aws_source})"
        )
    return None


def auto_name(type_: str, logical_name: str, *, seed: str = "") -> str:
    """The name pulumi-aws gives a resource of `type_` called `logical_name` when none is set: the logical name,
    `-` and 7 random hex characters (lowercased first for S3). Raises NameTooLong where the provider or AWS would."""
    rule = NAME_RULES[type_]
    base = logical_name.lower() if rule.lowercase else logical_name
    name = f"{base}{SEPARATOR}{random_suffix(logical_name, seed=seed)}"
    error = _too_long(type_, rule, name, what=f"name '{base}{SEPARATOR}' plus {RANDOM_SUFFIX_LENGTH} random chars")
    if error is not None:
        raise error
    return name


def checked_name(type_: str, logical_name: str, inputs: Mapping[str, object], *, seed: str = "") -> str | None:
    """The physical name a resource gets from its inputs (explicit name, prefix, or auto-name), checked against the
    type's limits; None for types without a name rule."""
    rule = NAME_RULES.get(type_)
    if rule is None:
        return None
    given = inputs.get(rule.property)
    if isinstance(given, str) and given:
        error = _too_long(type_, rule, given, what=f"{rule.property} {given!r} of {logical_name!r}")
        if error is not None:
            raise error
        return given
    prefix = inputs.get(rule.prefix_property) if rule.prefix_property else None
    if isinstance(prefix, str) and prefix:
        name = prefix + random_suffix(logical_name, seed=seed).ljust(PREFIX_SUFFIX_LENGTH, "0")
        error = _too_long(
            type_, rule, name, what=f"{rule.prefix_property} {prefix!r} plus {PREFIX_SUFFIX_LENGTH} unique chars"
        )
        if error is not None:
            raise error
        return name
    return auto_name(type_, logical_name, seed=seed)


def longest_logical_name(type_: str) -> int:
    """The longest logical name whose auto-name still fits both limits of `type_`."""
    return NAME_RULES[type_].max_length - len(SEPARATOR) - RANDOM_SUFFIX_LENGTH
