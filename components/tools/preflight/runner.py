"""Run every preflight check for a stack: read the account (`reads`), conclude (`checks_*`).

An AWS call that fails (access denied, an API the partition lacks, an endpoint or proxy that answers something
else) becomes that check's ERROR row with the service's message, never a crash: the other checks still run.
Without credentials nothing else can be read, so the run stops after the identity check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
from botocore.parsers import ResponseParserError

from ...karpenter.specs import NodePoolSpec
from ...platform.config import PlatformConfig
from ..stack_files import unset_secrets
from . import reads
from .checks_access import (
    cluster_access_check,
    cluster_name_check,
    control_plane_log_group,
    identity_check,
    interruption_queue_check,
    interruption_queue_prefixes,
    log_group_check,
    region_check,
)
from .checks_account import (
    SPOT_ROLE,
    data_repository_check,
    ebs_key_check,
    elastic_ip_check,
    existing_vpc_check,
    fsx_storage_check,
    nat_gateway_check,
    spot_role_check,
    vpc_quota_check,
)
from .checks_capacity import (
    Demand,
    as_ec2_filters,
    describe_filters,
    fits_limits,
    limit_fit_check,
    pool_demands,
    pool_offering_check,
    quota_check_name,
    quota_fit_check,
    quota_order,
    system_group_check,
    system_group_demands,
    vcpu_quota_check,
    zones_check,
)
from .clients import Clients, answered_by
from .placeholders import placeholders
from .quotas import ELASTIC_IPS, FSX_STORAGE, NAT_GATEWAYS_PER_AZ, VPCS_PER_REGION, Quota
from .results import CheckResult, Status, errored, failed
from .selection import InstanceShape, select

#: DescribeInstanceTypes filters in their hashable form (`describe_filters`).
_Filters = tuple[tuple[str, tuple[str, ...]], ...]


def _guarded(name: str, produce: Callable[[], Iterable[CheckResult | None]]) -> list[CheckResult]:
    try:
        return [result for result in produce() if result is not None]
    except ClientError as error:
        detail = error.response.get("Error", {})
        return [
            errored(
                name,
                f"could not check: {error.operation_name} answered {detail.get('Code')}: {detail.get('Message')}",
                f"let this identity make the read-only call {error.operation_name} (e.g. the ReadOnlyAccess policy), "
                "or check that the region's partition offers it",
            )
        ]
    except BotoCoreError as error:
        return [errored(name, f"could not check: {error}", "check the network path (proxy, endpoint) to the AWS API")]
    except ResponseParserError as error:  # not a BotoCoreError: botocore raises it bare
        return [_unreadable(name, error)]
    except (KeyError, TypeError, ValueError) as error:  # an answer without the fields the API documents
        return [
            errored(
                name,
                f"could not check: AWS answered something unexpected ({type(error).__name__}: {error})",
                "check the endpoint and proxy the AWS SDK uses (AWS_ENDPOINT_URL, HTTPS_PROXY)",
            )
        ]


def _unreadable(name: str, error: ResponseParserError) -> CheckResult:
    """An answer botocore could not parse: something other than AWS answered (a proxy, a portal, a wrong endpoint)."""
    detail = " ".join(str(error).split())
    return errored(
        name,
        f"could not check: {answered_by(error)} answered something that is not an AWS response ({detail[:300]})",
        "check the endpoint and proxy the AWS SDK uses (AWS_ENDPOINT_URL, HTTPS_PROXY)",
    )


def placeholder_checks(config: PlatformConfig) -> list[CheckResult]:
    return [
        failed(f"placeholder/{p.key}", f"{p.key} is {p.value}: {p.why}", f"set {p.key} to a real value")
        for p in placeholders(config)
    ]


def unset_secret_checks(raw_config: Mapping[str, str]) -> list[CheckResult]:
    """A failure per secret the config names that the stack does not set (`pulumi up` stops on it)."""
    return [
        failed(
            f"secret/{key}",
            f"{key} is not set: a client secret the Kubeflow config names",
            f"pulumi config set --secret {key} <secret>",
        )
        for key in unset_secrets(raw_config)
    ]


def run_preflight(config: PlatformConfig, clients: Clients) -> list[CheckResult]:
    offline = placeholder_checks(config)  # judged from the config alone, whatever AWS answers
    try:
        identity = reads.caller_identity(clients.sts)
    except NoCredentialsError:
        profile = f"profile {config.profile}" if config.profile else "the default credential chain"
        return [
            *offline,
            errored(
                "identity",
                f"no AWS credentials found ({profile})",
                "log in (aws sso login, or set AWS_PROFILE) and run again",
            ),
        ]
    except (ClientError, BotoCoreError) as error:
        return [
            *offline,
            errored(
                "identity",
                f"sts:GetCallerIdentity failed: {error}",
                "check the credentials and the network path to AWS",
            ),
        ]
    except ResponseParserError as error:
        return [*offline, _unreadable("identity", error)]
    except (KeyError, TypeError) as error:  # XML, but not GetCallerIdentity's answer (botocore reads it by key)
        return [
            *offline,
            errored(
                "identity",
                f"sts:GetCallerIdentity answered something unexpected ({type(error).__name__}: {error})",
                "check the endpoint and proxy the AWS SDK uses (AWS_ENDPOINT_URL, HTTPS_PROXY)",
            ),
        ]

    results = [*offline, identity_check(identity, config.region)]
    results += _guarded(
        "region", lambda: [region_check(config.region, reads.region_opt_in(clients.ec2, config.region))]
    )
    results += _guarded(
        "cluster-access", lambda: [cluster_access_check(config, identity, _principals(config, identity, clients))]
    )
    results += capacity_checks(config, clients)
    results += account_checks(config, clients)
    results += name_checks(config, clients)
    return results


def _principals(config: PlatformConfig, identity: reads.Identity, clients: Clients) -> dict[str, bool | None]:
    found: dict[str, bool | None] = {}
    for key, arn in config.cluster.admin_principals.items():
        account, partition = arn.split(":")[4], arn.split(":")[1]
        same = account == identity.account and partition == identity.partition
        found[key] = reads.principal_exists(clients.iam, arn) if same else None
    return found


def capacity_checks(config: PlatformConfig, clients: Clients) -> list[CheckResult]:
    """The zones, the system node group and every NodePool against what EC2 offers, then the vCPU quotas their
    demands fall under; a pool passes only if some type it may launch also fits under its quota."""
    zones = config.network.availability_zones
    results = _guarded("availability-zones", lambda: [zones_check(zones, reads.availability_zones(clients.ec2))])
    capacity = _Capacity(config, clients)
    results += _guarded("system-node-group", capacity.system_check)
    if not capacity.offered_read:  # the offerings could not be read: every pool and quota check rests on them
        return results
    for name, pool in sorted(config.karpenter.node_pools.items()):
        results += _guarded(f"nodepool/{name}", partial(capacity.pool_check, name, pool))
    results += capacity.quota_checks()
    return [capacity.with_quota_fit(result) for result in results]


class _Capacity:
    """What the capacity checks read once and share: the instance shapes per filter, the offerings of the zones, the
    demands on each vCPU quota and the quotas' values, and what each pool may launch."""

    def __init__(self, config: PlatformConfig, clients: Clients) -> None:
        self.config, self.clients = config, clients
        self.catalog: dict[_Filters, list[InstanceShape]] = {}
        self.offered: dict[str, frozenset[str]] = {}
        self.offered_read = False
        self.demands: list[Demand] = []
        self.quota_values: dict[Quota, float | None] = {}
        #: What each pool may launch (allowed, within its limits, offered in its zones) and on which capacity types.
        self.launchable_by_pool: dict[str, tuple[list[InstanceShape], tuple[str, ...]]] = {}

    def shapes(self, filters: _Filters) -> list[InstanceShape]:
        """DescribeInstanceTypes' answer for these filters, read once however many pools ask."""
        if filters not in self.catalog:
            self.catalog[filters] = reads.instance_shapes(self.clients.ec2, as_ec2_filters(filters))
        return self.catalog[filters]

    def system_check(self) -> list[CheckResult]:
        """The offerings of the zones (read here, for every later check), and the system node group against them."""
        zones, group = self.config.network.availability_zones, self.config.cluster.system_node_group
        self.offered.update(reads.offerings(self.clients.ec2, zones))
        self.offered_read = True
        self.demands.extend(system_group_demands(group, self.shapes((("instance-type", group.instance_types),))))
        return [system_group_check(group, zones, self.offered)]

    def pool_check(self, name: str, pool: NodePoolSpec) -> list[CheckResult]:
        """A pool's types offered in its zones and fitting its limits; what it may launch is kept for its quota."""
        selection = select(pool)
        pool_zones = selection.zones(self.config.network.availability_zones)
        allowed = selection.allowed(self.shapes(describe_filters(selection)))
        unevaluated = sorted({u for shape in allowed for u in selection.unevaluated(shape)})
        launchable = [
            s
            for s in allowed
            if set(pool_zones) & self.offered.get(s.instance_type, frozenset()) and fits_limits(pool, s)
        ]
        self.demands.extend(pool_demands(name, pool, selection, launchable))
        offering = pool_offering_check(name, pool_zones, allowed, self.offered, unevaluated)
        if offering.status is not Status.FAIL:
            self.launchable_by_pool[name] = (launchable, selection.capacity_types)
            return [limit_fit_check(name, pool, allowed) or offering]
        return [offering]

    def quota_checks(self) -> list[CheckResult]:
        """Each vCPU quota the demands fall under, read and compared with their sum; its value kept for the pools."""
        by_quota: dict[Quota, list[Demand]] = {}
        for demand in self.demands:
            by_quota.setdefault(demand.quota, []).append(demand)
        results: list[CheckResult] = []
        for quota, quota_demands in sorted(by_quota.items(), key=lambda item: quota_order(item[0])):

            def quota_check(quota: Quota = quota, quota_demands: list[Demand] = quota_demands) -> list[CheckResult]:
                self.quota_values[quota] = reads.quota_value(self.clients.quotas, quota)
                return [vcpu_quota_check(quota, self.quota_values[quota], quota_demands, self.config.region)]

            results += _guarded(quota_check_name(quota), quota_check)
        return results

    def with_quota_fit(self, result: CheckResult) -> CheckResult:
        """A passing pool's result, failed when no type it may launch fits under its quota; any other as it is."""
        name = result.name.removeprefix("nodepool/")
        if result.name.startswith("nodepool/") and result.status is not Status.FAIL and name in self.launchable_by_pool:
            shapes, capacity = self.launchable_by_pool[name]
            return quota_fit_check(name, shapes, capacity, self.quota_values) or result
        return result


def account_checks(config: PlatformConfig, clients: Clients) -> list[CheckResult]:
    """The account's room for the network, the spot service-linked role, FSx and the EBS default key."""
    results = _network_quota_checks(config, clients)
    spot_pools = sorted(
        name for name, pool in config.karpenter.node_pools.items() if "spot" in select(pool).capacity_types
    )
    results += _guarded(
        "spot-service-linked-role",
        lambda: [spot_role_check(spot_pools, reads.role_exists(clients.iam, SPOT_ROLE) if spot_pools else None)],
    )
    results += _fsx_checks(config, clients)
    results += _guarded("ebs-default-key", lambda: [ebs_key_check(reads.ebs_default_key(clients.ec2, clients.kms))])
    return results


def _network_quota_checks(config: PlatformConfig, clients: Clients) -> list[CheckResult]:
    """The existing VPC the stack names, if any, and the region's room for the VPC, Elastic IPs and NAT gateways."""
    network, region = config.network, config.region
    results: list[CheckResult] = []
    if network.existing is not None:
        existing = network.existing
        results += _guarded(
            "existing-vpc",
            lambda: [
                existing_vpc_check(
                    existing,
                    network.availability_zones,
                    reads.vpc_exists(clients.ec2, existing.vpc_id),
                    reads.subnet_zones(clients.ec2, existing.private_subnet_ids),
                )
            ],
        )
    results += _guarded(
        "quota/vpcs",
        lambda: [
            vpc_quota_check(
                network, reads.vpc_count(clients.ec2), reads.quota_value(clients.quotas, VPCS_PER_REGION), region
            )
        ],
    )
    results += _guarded(
        "quota/elastic-ips",
        lambda: [
            elastic_ip_check(
                network, reads.elastic_ip_count(clients.ec2), reads.quota_value(clients.quotas, ELASTIC_IPS), region
            )
        ],
    )
    results += _guarded(
        "quota/nat-gateways",
        lambda: [
            nat_gateway_check(
                network,
                reads.nat_gateways_by_zone(clients.ec2),
                reads.quota_value(clients.quotas, NAT_GATEWAYS_PER_AZ),
                region,
            )
        ],
    )
    return results


def _fsx_checks(config: PlatformConfig, clients: Clients) -> list[CheckResult]:
    """With FSx for Lustre: the account's room for its storage, and its data repository (none without FSx)."""
    fsx = config.storage.fsx
    if fsx is None:
        return []
    return [
        *_guarded(
            "quota/fsx-storage",
            lambda: [
                fsx_storage_check(
                    config,
                    reads.lustre_storage_by_type(clients.fsx),
                    reads.quota_value(clients.quotas, FSX_STORAGE[fsx.deployment_type]),
                )
            ],
        ),
        *_guarded("fsx-data-repository", lambda: [data_repository_check(config)]),
    ]


def name_checks(config: PlatformConfig, clients: Clients) -> list[CheckResult]:
    name = config.cluster_name
    found: list[dict[str, str] | None] = []

    def cluster() -> list[CheckResult]:
        found.append(reads.cluster_tags(clients.eks, name))
        return [cluster_name_check(config, found[0])]

    def queues() -> list[CheckResult]:
        named = {
            url: tags
            for prefix in interruption_queue_prefixes(name)
            for url, tags in reads.queues_named(clients.sqs, prefix).items()
        }
        return [interruption_queue_check(config, named, found[0] if found else None)]

    return [
        *_guarded("name/cluster", cluster),
        *_guarded(
            "name/log-group",
            lambda: [log_group_check(config, reads.log_group_tags(clients.logs, control_plane_log_group(name)))],
        ),
        *_guarded("name/interruption-queue", queues),
    ]
