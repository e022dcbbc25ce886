"""Finding the cluster's leftovers: read-only AWS listings, narrowed by the rules in `selectors`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from . import selectors as sel
from .clients import Clients
from .model import Found, Kept, Kind, SweepTarget

#: Instance states that still cost or still hold interfaces and volumes.
LIVE_INSTANCE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")
GONE_VOLUME_STATES = frozenset({"deleting", "deleted"})
GONE_ENDPOINT_STATES = frozenset({"deleted", "deleting", "rejected", "failed", "expired"})
#: describe_tags of elbv2 takes at most 20 ARNs; EC2 filters take at most 200 values.
ELB_TAG_BATCH = 20
FILTER_VALUES = 200


@dataclass(frozen=True)
class Selection:
    take: tuple[Found, ...] = ()
    keep: tuple[Kept, ...] = ()


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _filter(name: str, *values: str) -> list[dict[str, Any]]:
    """One EC2 filter, as a list so that filters add up with `+`."""
    return [{"Name": name, "Values": list(values)}]


class Finder:
    """Read-only listings of what the sweep and the leak check look at. Raises the AWS error of a failed listing."""

    def __init__(self, clients: Clients, target: SweepTarget):
        self._aws = clients
        self._target = target
        self._cluster = target.cluster_name

    # ------------------------------------------------------------------------------------------ raw listings

    def _pages(self, client: Any, operation: str, key: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
        for page in client.get_paginator(operation).paginate(**kwargs):
            yield from page.get(key, ())

    def _vpc_filter(self) -> list[dict[str, Any]]:
        return _filter("vpc-id", self._target.vpc_id) if self._target.vpc_id else []

    def instances(self, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        live = _filter("instance-state-name", *LIVE_INSTANCE_STATES)
        return [
            instance
            for reservation in self._pages(self._aws.ec2, "describe_instances", "Reservations", Filters=filters + live)
            for instance in reservation.get("Instances", ())
        ]

    def volumes(self, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found = self._pages(self._aws.ec2, "describe_volumes", "Volumes", Filters=filters)
        return [v for v in found if v.get("State") not in GONE_VOLUME_STATES]

    def interfaces(self, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(self._pages(self._aws.ec2, "describe_network_interfaces", "NetworkInterfaces", Filters=filters))

    def security_groups(self, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(self._pages(self._aws.ec2, "describe_security_groups", "SecurityGroups", Filters=filters))

    def subnets(self, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(self._pages(self._aws.ec2, "describe_subnets", "Subnets", Filters=filters))

    def vpcs(self, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(self._pages(self._aws.ec2, "describe_vpcs", "Vpcs", Filters=filters))

    def launch_templates(self, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(self._pages(self._aws.ec2, "describe_launch_templates", "LaunchTemplates", Filters=filters))

    def vpc_endpoints(self) -> list[dict[str, Any]]:
        if not self._target.vpc_id:
            return []
        found = self._pages(self._aws.ec2, "describe_vpc_endpoints", "VpcEndpoints", Filters=self._vpc_filter())
        return [e for e in found if str(e.get("State", "")).lower() not in GONE_ENDPOINT_STATES]

    def _with_elb_tags(self, items: list[dict[str, Any]], arn_key: str) -> list[tuple[dict[str, Any], dict[str, str]]]:
        tags: dict[str, dict[str, str]] = {}
        for batch in chunks([item[arn_key] for item in items], ELB_TAG_BATCH):
            for description in self._aws.elbv2.describe_tags(ResourceArns=list(batch))["TagDescriptions"]:
                tags[description["ResourceArn"]] = sel.tag_dict(description.get("Tags"))
        return [(item, tags.get(item[arn_key], {})) for item in items]

    def load_balancers(self) -> list[tuple[dict[str, Any], dict[str, str]]]:
        found = list(self._pages(self._aws.elbv2, "describe_load_balancers", "LoadBalancers"))
        return self._with_elb_tags(found, "LoadBalancerArn")

    def target_groups(self) -> list[tuple[dict[str, Any], dict[str, str]]]:
        found = list(self._pages(self._aws.elbv2, "describe_target_groups", "TargetGroups"))
        return self._with_elb_tags(found, "TargetGroupArn")

    def file_systems(self) -> list[dict[str, Any]]:
        found = self._pages(self._aws.fsx, "describe_file_systems", "FileSystems")
        return [fs for fs in found if fs.get("Lifecycle") != "DELETED"]

    def instance_profiles(self) -> list[tuple[dict[str, Any], sel.ProfileMatch]]:
        """Profiles named or pathed the way Karpenter does for this cluster, with how their tags match.

        Listing calls return no tags, so only these candidates are read one by one.
        """
        prefix, path_prefix = f"{self._cluster}_", f"{sel.KARPENTER_PROFILE_PATH}{self._target.region}/{self._cluster}/"
        matched = []
        for listed in self._pages(self._aws.iam, "list_instance_profiles", "InstanceProfiles"):
            name, path = listed["InstanceProfileName"], listed.get("Path", "/")
            if not (name.startswith(prefix) or path.startswith(path_prefix)):
                continue
            profile = self._aws.iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
            tags = sel.tag_dict(profile.get("Tags"))
            matched.append((profile, sel.match_instance_profile(path, tags, self._cluster, self._target.region)))
        return matched

    # --------------------------------------------------------------------------------- what the sweep takes

    def karpenter_instances(self) -> Selection:
        candidates = self.instances(_filter("tag-key", sel.NODEPOOL_TAG))
        ours = [i for i in candidates if sel.is_karpenter_instance(sel.tag_dict(i.get("Tags")), self._cluster)]
        return Selection(take=tuple(_instance(i) for i in ours))

    def karpenter_launch_templates(self) -> Selection:
        found = self.launch_templates(_filter(f"tag:{sel.LAUNCH_TEMPLATE_CLUSTER_TAG}", self._cluster))
        return Selection(
            take=tuple(
                Found(Kind.LAUNCH_TEMPLATE, lt["LaunchTemplateId"], lt.get("LaunchTemplateName", ""))
                for lt in found
                if sel.is_karpenter_launch_template(sel.tag_dict(lt.get("Tags")), self._cluster)
            )
        )

    def karpenter_instance_profiles(self) -> Selection:
        take, keep = [], []
        for profile, match in self.instance_profiles():
            roles = tuple(role["RoleName"] for role in profile.get("Roles", ()))
            found = Found(
                Kind.INSTANCE_PROFILE,
                profile["InstanceProfileName"],
                f"roles: {', '.join(roles) or 'none'}",
                {"roles": roles},
            )
            if match is sel.ProfileMatch.OURS:
                take.append(found)
            elif match is sel.ProfileMatch.REGION_UNKNOWN:
                keep.append(
                    Kept(
                        found,
                        f"tagged for cluster {self._cluster!r} but names no region (no {sel.REGION_TAG} tag or "
                        "/karpenter/<region>/ path); IAM is global, so a cluster of the same name in another region "
                        "may still use it: delete it yourself once you are sure",
                    )
                )
        return Selection(tuple(take), tuple(keep))

    def controller_load_balancers(self) -> Selection:
        return Selection(
            take=tuple(
                Found(
                    Kind.LOAD_BALANCER,
                    lb["LoadBalancerArn"],
                    f"{lb.get('Type', '')} {lb.get('LoadBalancerName', '')}".strip(),
                )
                for lb, tags in self.load_balancers()
                if sel.is_lbc_resource(tags, self._cluster)
            )
        )

    def controller_target_groups(self) -> Selection:
        return Selection(
            take=tuple(
                Found(Kind.TARGET_GROUP, tg["TargetGroupArn"], tg.get("TargetGroupName", ""))
                for tg, tags in self.target_groups()
                if sel.is_lbc_resource(tags, self._cluster)
            )
        )

    def claim_volumes(self) -> Selection:
        found = self.volumes(_filter(f"tag:{sel.EBS_CSI_TAG}", "true"))
        return Selection(
            take=tuple(_volume(v) for v in found if sel.is_pvc_volume(sel.tag_dict(v.get("Tags")), self._cluster))
        )

    def claim_file_systems(self) -> Selection:
        return Selection(
            take=tuple(
                _file_system(fs)
                for fs in self.file_systems()
                if sel.is_dynamic_file_system(sel.tag_dict(fs.get("Tags")), self._cluster)
            )
        )

    def guardduty_endpoints(self) -> Selection:
        if not self._target.owns_vpc:
            return Selection()  # a shared VPC's endpoint serves every cluster in it
        return Selection(
            take=tuple(
                Found(Kind.VPC_ENDPOINT, e["VpcEndpointId"], e.get("ServiceName", ""), {"state": e.get("State")})
                for e in self.vpc_endpoints()
                if sel.is_guardduty_endpoint(e.get("ServiceName", ""), sel.tag_dict(e.get("Tags")), self._target.region)
            )
        )

    def cni_interfaces(self) -> Selection:
        if not self._target.vpc_id:
            return Selection()
        found = self.interfaces(self._vpc_filter() + _filter("status", "available"))
        return Selection(
            take=tuple(
                Found(Kind.NETWORK_INTERFACE, eni["NetworkInterfaceId"], eni.get("Description", ""))
                for eni in found
                if eni.get("Status") == "available"
                and sel.is_cni_interface(
                    eni.get("Description", ""),
                    sel.tag_dict(eni.get("TagSet")),
                    self._cluster,
                    vpc_is_the_stacks=self._target.owns_vpc,
                )
            )
        )

    def swept_security_groups(self) -> Selection:
        """The load balancer controller's groups, and GuardDuty's in a VPC of the stack's own."""
        groups = self.security_groups(self._vpc_filter() + _filter(f"tag:{sel.LBC_CLUSTER_TAG}", self._cluster))
        groups = [g for g in groups if sel.is_lbc_resource(sel.tag_dict(g.get("Tags")), self._cluster)]
        if self._target.vpc_id and self._target.owns_vpc:
            guardduty = self.security_groups(self._vpc_filter() + _filter(f"tag:{sel.GUARDDUTY_MANAGED_TAG}", "true"))
            groups += [g for g in guardduty if sel.is_guardduty_group(sel.tag_dict(g.get("Tags")))]
        return Selection(
            take=tuple(
                Found(Kind.SECURITY_GROUP, g["GroupId"], g.get("GroupName", ""), {"vpc_id": g.get("VpcId")})
                for g in groups
            )
        )

    def referencing_rules(self, doomed: Sequence[Found]) -> tuple[Found, ...]:
        """Rules of other security groups that name a doomed group: AWS refuses to delete a group still referenced.

        One entry per (group, direction, referenced group), holding exactly the permissions to revoke, so that
        nothing else of the other group changes.
        """
        doomed_ids = {f.id for f in doomed}
        rules: list[Found] = []
        for vpc_id in sorted({str(f.detail.get("vpc_id")) for f in doomed if f.detail.get("vpc_id")}):
            for group in self.security_groups(_filter("vpc-id", vpc_id)):
                if group["GroupId"] in doomed_ids:
                    continue  # deleted itself; its rules go with it
                for direction, key in (("ingress", "IpPermissions"), ("egress", "IpPermissionsEgress")):
                    rules.extend(_rules_naming(group, direction, group.get(key, ()), doomed_ids))
        return tuple(rules)


def _instance(instance: dict[str, Any]) -> Found:
    tags = sel.tag_dict(instance.get("Tags"))
    state = instance.get("State", {}).get("Name", "")
    label = f"{instance.get('InstanceType', '')}, nodepool {tags.get(sel.NODEPOOL_TAG, '?')}, {state}"
    return Found(Kind.INSTANCE, instance["InstanceId"], label, {"state": state})


def _volume(volume: dict[str, Any]) -> Found:
    tags = sel.tag_dict(volume.get("Tags"))
    attachments = tuple(
        (a["InstanceId"], a.get("Device", ""), a.get("State", "attached"))
        for a in volume.get("Attachments", ())
        if a.get("State") != "detached"
    )
    parts = [f"{volume.get('Size', '?')} GiB"]
    if sel.PVC_NAME_TAG in tags:
        parts.append(f"claim {tags.get(sel.PVC_NAMESPACE_TAG, '?')}/{tags[sel.PVC_NAME_TAG]}")
    parts.append(str(volume.get("State", "")))
    if attachments:
        parts.append(f"attached to {', '.join(instance for instance, _, _ in attachments)}")
    label = ", ".join(parts)
    return Found(Kind.VOLUME, volume["VolumeId"], label, {"state": volume.get("State"), "attachments": attachments})


def _file_system(fs: dict[str, Any]) -> Found:
    lifecycle = fs.get("Lifecycle", "AVAILABLE")
    label = f"{fs.get('FileSystemType', '')} {fs.get('StorageCapacity', '?')} GiB, {lifecycle}"
    detail = {
        "lifecycle": lifecycle,
        "network_interface_ids": tuple(fs.get("NetworkInterfaceIds", ())),
        "subnet_ids": tuple(fs.get("SubnetIds", ())),
    }
    return Found(Kind.FILE_SYSTEM, fs["FileSystemId"], label, detail)


def _rules_naming(
    group: dict[str, Any], direction: str, permissions: Sequence[dict[str, Any]], doomed: set[str]
) -> list[Found]:
    by_reference: dict[str, list[dict[str, Any]]] = {}
    for permission in permissions:
        for pair in permission.get("UserIdGroupPairs", ()):
            referenced = pair.get("GroupId")
            if referenced in doomed:
                revoke: dict[str, Any] = {
                    "IpProtocol": permission["IpProtocol"],
                    "UserIdGroupPairs": [{"GroupId": referenced}],
                }
                for port in ("FromPort", "ToPort"):
                    if port in permission:
                        revoke[port] = permission[port]
                by_reference.setdefault(referenced, []).append(revoke)
    return [
        Found(
            Kind.SECURITY_GROUP_RULE,
            f"{group['GroupId']}/{direction}/{referenced}",
            f"{direction} of {group.get('GroupName', group['GroupId'])} naming {referenced}",
            {"group_id": group["GroupId"], "direction": direction, "permissions": tuple(revokes)},
        )
        for referenced, revokes in sorted(by_reference.items())
    ]
