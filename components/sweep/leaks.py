"""The leak check, for CI after `pulumi destroy`: is anything tagged for the cluster still there?

It casts a wider net than the sweep, which runs while the cluster still exists and so must leave EKS's and Pulumi's
own objects alone: after a destroy, anything that names the cluster (its security group, node group instances, the
discovery-tagged subnets, the stack's VPC) is a leak. Claims' volumes and file systems are leaks only when the stack
destroys stateful resources; under protect and retain they are listed as kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from . import selectors as sel
from .clients import AWS_ERRORS, Clients, describe
from .discovery import Finder
from .model import (
    Failure,
    Found,
    Kept,
    Kind,
    SweepTarget,
    _failure_lines,
    _found_lines,
    _heading,
    _kept_lines,
    _section,
)


@dataclass(frozen=True)
class LeakReport:
    target: SweepTarget
    leaks: tuple[Found, ...]
    #: The cluster's objects left on purpose (stateful policy), or that cannot be told apart from another region's.
    retained: tuple[Kept, ...]
    #: Kinds that could not be listed: the check cannot vouch for them.
    failed: tuple[Failure, ...]

    @property
    def ok(self) -> bool:
        return not self.leaks and not self.failed

    def as_json(self) -> dict[str, Any]:
        return {
            "target": self.target.as_json(),
            "ok": self.ok,
            "leaks": [f.as_json() for f in self.leaks],
            "retained": [k.as_json() for k in self.retained],
            "failed": [f.as_json() for f in self.failed],
        }


def find_leaks(aws: Clients | Any, target: SweepTarget) -> LeakReport:
    """List what of the cluster remains. Read-only. `aws` is a `Clients` or a `boto3.Session`."""
    return _LeakCheck(aws if isinstance(aws, Clients) else Clients.from_session(aws, target.region), target).run()


class _LeakCheck:
    def __init__(self, clients: Clients, target: SweepTarget):
        self._aws, self._target, self._cluster = clients, target, target.cluster_name
        self._find = Finder(clients, target)
        self._leaks: dict[tuple[Kind, str], Found] = {}
        self._retained: list[Kept] = []
        self._failed: list[Failure] = []

    def run(self) -> LeakReport:
        checks: tuple[tuple[Kind, Callable[[], None]], ...] = (
            (Kind.INSTANCE, self._instances),
            (Kind.LAUNCH_TEMPLATE, self._launch_templates),
            (Kind.INSTANCE_PROFILE, self._instance_profiles),
            (Kind.LOAD_BALANCER, self._load_balancers),
            (Kind.TARGET_GROUP, self._target_groups),
            (Kind.VOLUME, self._volumes),
            (Kind.FILE_SYSTEM, self._file_systems),
            (Kind.VPC_ENDPOINT, self._endpoints),
            (Kind.NETWORK_INTERFACE, self._interfaces),
            (Kind.SECURITY_GROUP, self._security_groups),
            (Kind.SUBNET, self._subnets),
            (Kind.VPC, self._vpc),
        )
        for kind, check in checks:
            try:
                check()
            except AWS_ERRORS as error:
                self._failed.append(Failure(Found(kind, "*", f"listing {kind.value}s"), describe(error)))
        return LeakReport(self._target, tuple(self._leaks.values()), tuple(self._retained), tuple(self._failed))

    def _leak(self, found: Iterable[Found]) -> None:
        for item in found:
            self._leaks.setdefault((item.kind, item.id), item)

    def _tagged(self) -> list[dict[str, Any]]:
        """An EC2 filter for objects carrying any tag key that can name the cluster (the values are checked after)."""
        return [{"Name": "tag-key", "Values": list(sel.cluster_tag_keys(self._cluster))}]

    def _is_ours(self, tags: Iterable[dict[str, str]] | None) -> bool:
        return sel.is_cluster_tagged(sel.tag_dict(tags), self._cluster)

    def _stateful(self, found: Iterable[Found]) -> None:
        found = list(found)
        if self._target.keeps_data:
            reason = f"statefulResources is {self._target.stateful_policy.value!r}: kept on purpose"
            self._retained.extend(Kept(f, reason) for f in found)
        else:
            self._leak(found)

    def _instances(self) -> None:
        self._leak(
            Found(Kind.INSTANCE, i["InstanceId"], f"{i.get('InstanceType', '')}, {i['State']['Name']}")
            for i in self._find.instances(self._tagged())
            if self._is_ours(i.get("Tags"))
        )

    def _launch_templates(self) -> None:
        self._leak(
            Found(Kind.LAUNCH_TEMPLATE, lt["LaunchTemplateId"], lt.get("LaunchTemplateName", ""))
            for lt in self._find.launch_templates(self._tagged())
            if self._is_ours(lt.get("Tags"))
        )

    def _instance_profiles(self) -> None:
        selection = self._find.karpenter_instance_profiles()
        self._leak(selection.take)
        self._retained.extend(selection.keep)

    def _load_balancers(self) -> None:
        self._leak(
            Found(Kind.LOAD_BALANCER, lb["LoadBalancerArn"], lb.get("LoadBalancerName", ""))
            for lb, tags in self._find.load_balancers()
            if sel.is_cluster_tagged(tags, self._cluster)
        )

    def _target_groups(self) -> None:
        self._leak(
            Found(Kind.TARGET_GROUP, tg["TargetGroupArn"], tg.get("TargetGroupName", ""))
            for tg, tags in self._find.target_groups()
            if sel.is_cluster_tagged(tags, self._cluster)
        )

    def _volumes(self) -> None:
        claims = self._find.claim_volumes().take
        self._stateful(claims)
        claimed = {f.id for f in claims}
        self._leak(
            Found(Kind.VOLUME, v["VolumeId"], f"{v.get('Size', '?')} GiB, {v.get('State', '')}")
            for v in self._find.volumes(self._tagged())
            if v["VolumeId"] not in claimed and self._is_ours(v.get("Tags"))
        )

    def _file_systems(self) -> None:
        self._stateful(self._find.claim_file_systems().take)

    def _endpoints(self) -> None:
        self._leak(self._find.guardduty_endpoints().take)

    def _interfaces(self) -> None:
        self._leak(
            Found(Kind.NETWORK_INTERFACE, eni["NetworkInterfaceId"], eni.get("Description", ""))
            for eni in self._find.interfaces(self._tagged())
            if self._is_ours(eni.get("TagSet"))
        )
        if self._target.vpc_id:
            self._leak(
                Found(Kind.NETWORK_INTERFACE, eni["NetworkInterfaceId"], eni.get("Description", ""))
                for eni in self._find.interfaces([{"Name": "vpc-id", "Values": [self._target.vpc_id]}])
                if sel.is_cni_interface(
                    eni.get("Description", ""),
                    sel.tag_dict(eni.get("TagSet")),
                    self._cluster,
                    vpc_is_the_stacks=self._target.owns_vpc,
                )
            )

    def _security_groups(self) -> None:
        self._leak(
            Found(Kind.SECURITY_GROUP, g["GroupId"], g.get("GroupName", ""))
            for g in self._find.security_groups(self._tagged())
            if self._is_ours(g.get("Tags"))
        )
        self._leak(self._find.swept_security_groups().take)

    def _subnets(self) -> None:
        filters = [{"Name": f"tag:{sel.DISCOVERY_TAG}", "Values": [self._cluster]}]
        self._leak(
            Found(Kind.SUBNET, s["SubnetId"], f"{s.get('CidrBlock', '')} in {s.get('VpcId', '')}, tagged for discovery")
            for s in self._find.subnets(filters)
        )

    def _vpc(self) -> None:
        if not (self._target.vpc_id and self._target.owns_vpc):
            return  # a VPC the stack did not create outlives it by design
        filters = [{"Name": "vpc-id", "Values": [self._target.vpc_id]}]
        self._leak(
            Found(Kind.VPC, v["VpcId"], f"{v.get('CidrBlock', '')}, the stack's VPC") for v in self._find.vpcs(filters)
        )


def leak_text(report: LeakReport) -> str:
    lines = [_heading(report.target, "Leak check")]
    lines += _section("Left behind", _found_lines(report.leaks))
    lines += _section("Kept", _kept_lines(report.retained))
    lines += _section("Could not list", _failure_lines(report.failed))
    found = (
        "Leaks found: `python -m components.tools.sweep --stack <stack>` lists what the sweep would delete, "
        "and deletes it with --yes."
    )
    lines += ["", "No leaks." if report.ok else found]
    return "\n".join(lines)
