"""FSx for Lustre, as the storage components build it: the file system and its security group (`FsxFileSystem`), its
link to a bucket prefix, the FSx CSI driver, and the volumes team namespaces claim (`Storage`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws

from .. import helm, k8s_objects, versions
from .. import network_policies as netpol
from ..cluster.handle import ClusterHandle
from ..config.types import StatefulResources
from ..identity.documents import to_json
from ..identity.roles import WorkloadRole
from ..pod_security import TEAM_POD_SECURITY
from ..sweep.model import Kind
from ..sweep.resource import SweepArgs, sweep_step
from ..tags import DYNAMIC_FSX_TAG
from .config import DataRepository, FsxConfig
from .render import (
    data_repository_policy,
    fsx_csi_controller_policy,
    fsx_storage_class,
    fsx_volume,
    no_accelerators_quota,
)

#: Lustre network ports: 988 for the file system, 1018-1023 for the servers' replies (FSx for Lustre docs,
#: "File system access control with Amazon VPC").
LUSTRE_PORTS = {"lnet": (988, 988), "servers": (1018, 1023)}
FSX_CSI_NAMESPACE = "kube-system"
#: The controller's service account as the chart names it; its IRSA trust policy names exactly this.
FSX_CSI_CONTROLLER_SERVICE_ACCOUNT = "fsx-csi-controller-sa"
FSX_STORAGE_CLASS = "fsx-lustre"
#: Creating a file system and importing a large bucket prefix take far longer than the provider's defaults.
FSX_TIMEOUTS = pulumi.CustomTimeouts(create="90m", update="90m", delete="60m")
IMPORT_TIMEOUTS = pulumi.CustomTimeouts(create="6h", update="6h", delete="2h")


def security_group(
    name: str, *, vpc_id: pulumi.Input[str], cluster_name: str, parent: pulumi.Resource
) -> tuple[aws.ec2.SecurityGroup, list[pulumi.Resource]]:
    """The file servers' security group (`name`) and the rules between the servers themselves, which FSx checks when
    it creates the file system. They need nothing of the cluster, so the file system is made alongside it."""
    child = pulumi.ResourceOptions(parent=parent)
    group = aws.ec2.SecurityGroup(
        name,
        vpc_id=vpc_id,
        description="FSx for Lustre: Lustre traffic from the cluster's nodes and between file servers",
        tags={"Name": f"{cluster_name}-fsx"},
        opts=child,
    )
    rules: list[pulumi.Resource] = [
        _ingress(f"{name}-{port_key}-from-self", group.id, ("self", group.id), ports, child)
        for port_key, ports in LUSTRE_PORTS.items()
    ]
    rules.append(_egress(f"{name}-to-self", group, ("self", group.id), child))
    return group, rules


def client_rules(
    name: str, group: aws.ec2.SecurityGroup, cluster: ClusterHandle, *, parent: pulumi.Resource
) -> list[pulumi.Resource]:
    """Lustre both ways between the file servers and the cluster's nodes (clients accept connections back from
    the servers on the same ports); rule names start with `name`."""
    child = pulumi.ResourceOptions(parent=parent)
    nodes = cluster.cluster_security_group_id
    rules: list[pulumi.Resource] = []
    for port_key, ports in LUSTRE_PORTS.items():
        rules.append(_ingress(f"{name}-fsx-{port_key}-from-nodes", group.id, ("nodes", nodes), ports, child))
        rules.append(_ingress(f"{name}-nodes-{port_key}-from-fsx", nodes, ("fsx", group.id), ports, child))
    rules.append(_egress(f"{name}-fsx-to-nodes", group, ("nodes", nodes), child))
    return rules


def _ingress(
    name: str,
    target_id: pulumi.Input[str],
    source: tuple[str, pulumi.Input[str]],
    ports: tuple[int, int],
    opts: pulumi.ResourceOptions,
) -> aws.vpc.SecurityGroupIngressRule:
    (source_key, source_id), (low, high) = source, ports
    return aws.vpc.SecurityGroupIngressRule(
        name,
        security_group_id=target_id,
        referenced_security_group_id=source_id,
        ip_protocol="tcp",
        from_port=low,
        to_port=high,
        description=f"Lustre {low}-{high} from {source_key}",
        opts=opts,
    )


def _egress(
    name: str, group: aws.ec2.SecurityGroup, peer: tuple[str, pulumi.Input[str]], opts: pulumi.ResourceOptions
) -> aws.vpc.SecurityGroupEgressRule:
    peer_key, peer_id = peer
    return aws.vpc.SecurityGroupEgressRule(
        name,
        security_group_id=group.id,
        referenced_security_group_id=peer_id,
        ip_protocol="-1",
        description=f"replies to {peer_key}",
        opts=opts,
    )


def log_group(name: str, stateful: pulumi.ResourceOptions) -> aws.cloudwatch.LogGroup:
    return aws.cloudwatch.LogGroup(name, name_prefix="/aws/fsx/", retention_in_days=90, opts=stateful)


def file_system(
    name: str,
    config: FsxConfig,
    *,
    cluster_name: str,
    subnet_id: pulumi.Input[str],
    group: aws.ec2.SecurityGroup,
    rules: Sequence[pulumi.Resource],
    logs: aws.cloudwatch.LogGroup | None,
    stateful_resources: StatefulResources,
    stateful: pulumi.ResourceOptions,
    after: Sequence[pulumi.Resource] = (),
) -> aws.fsx.LustreFileSystem:
    """The file system, in one subnet, created once the servers' own rules (and `after`) are in place."""
    log_configuration: aws.fsx.LustreFileSystemLogConfigurationArgsDict = (
        {"level": config.log_level, "destination": logs.arn} if logs else {"level": "DISABLED"}
    )
    destroy = stateful_resources is StatefulResources.DESTROY
    return aws.fsx.LustreFileSystem(
        name,
        deployment_type=config.deployment_type,
        storage_capacity=config.storage_capacity_gib,
        per_unit_storage_throughput=config.per_unit_storage_throughput,
        data_compression_type=config.compression,
        file_system_type_version=versions.FSX_LUSTRE_VERSION,
        subnet_ids=subnet_id,  # one subnet: the provider takes it as a single string
        security_group_ids=[group.id],
        log_configuration=log_configuration,
        skip_final_backup=destroy if config.deployment_type == "PERSISTENT_2" else None,
        tags={"Name": f"{cluster_name}-fsx"},
        opts=pulumi.ResourceOptions.merge(
            stateful,
            # why: the servers talk Lustre to each other while the file system is created (an FSx create fails
            # if the group's rules are still being added); on destroy the rules outlive it.
            pulumi.ResourceOptions(custom_timeouts=FSX_TIMEOUTS, depends_on=[*rules, *after]),
        ),
    )


def data_repository(
    name: str,
    repository: DataRepository,
    cluster: ClusterHandle,
    bucket: aws.s3.Bucket,
    file_system: aws.fsx.LustreFileSystem,
    key_policy: aws.kms.KeyPolicy | None,
    *,
    parent: pulumi.Resource,
) -> pulumi.Output[str]:
    """The file system linked to the bucket prefix, both ways; returns the ARN of the policy the identity running
    `pulumi up` needs for that."""
    policy = aws.iam.Policy(
        f"{name}-fsx-data-repository",
        description="What the identity running pulumi up needs to link FSx to the bucket prefix",
        policy=pulumi.Output.all(cluster.partition, bucket.arn).apply(
            lambda v: to_json(data_repository_policy(partition=v[0], bucket_arn=v[1], prefix=repository.prefix))
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    events = ["NEW", "CHANGED", "DELETED"]
    aws.fsx.DataRepositoryAssociation(
        f"{name}-fsx-{repository.bucket}",
        file_system_id=file_system.id,
        file_system_path=repository.file_system_path,
        data_repository_path=bucket.bucket.apply(lambda b: f"s3://{b}/{repository.prefix}"),
        batch_import_meta_data_on_create=True,
        imported_file_chunk_size=repository.imported_file_chunk_size_mib,
        s3={"auto_import_policy": {"events": events}, "auto_export_policy": {"events": events}},
        delete_data_in_filesystem=False,
        opts=pulumi.ResourceOptions(
            parent=parent,
            # FSx removes the association with its file system (the bucket's data stays): detaching it first
            # would add minutes to destroy for nothing. A retained file system keeps it.
            deleted_with=file_system,
            custom_timeouts=IMPORT_TIMEOUTS,
            # why: on a KMS-encrypted bucket, imports and exports fail until the key admits FSx's S3 access.
            depends_on=[key_policy] if key_policy is not None else [],
        ),
    )
    return policy.arn


def csi_role(name: str, cluster: ClusterHandle, *, parent: pulumi.Resource) -> WorkloadRole:
    """The CSI controller's identity for dynamic provisioning: create file systems tagged for this cluster, and
    delete those."""
    return cluster.workload_role(
        f"{name}-fsx-csi",
        namespace=FSX_CSI_NAMESPACE,
        service_account=FSX_CSI_CONTROLLER_SERVICE_ACCOUNT,
        inline_policies={
            "controller": pulumi.Output.all(cluster.partition, cluster.name).apply(
                lambda v: to_json(fsx_csi_controller_policy(partition=v[0], cluster_name=v[1]))
            )
        },
        opts=pulumi.ResourceOptions(parent=parent),
    )


def sweep(
    name: str,
    cluster: ClusterHandle,
    stateful_resources: StatefulResources,
    *,
    after: Sequence[pulumi.Resource],
    parent: pulumi.Resource,
) -> pulumi.Resource:
    """The teardown sweep of the file systems the driver made for claims (`storage.fsx.storageClass`).

    Declare it whenever the platform's file system exists, with the Storage component as `parent` and its name
    kept (a new URN without an alias deletes it in `pulumi up`, and its delete sweeps), and pass it in the driver's
    `after`: it is deleted after the driver and before the security group those file systems use (`after`: the
    group and every rule of it). Declaring it only while `storageClass` is on would let turning the class off delete
    it, and so sweep the live claims' file systems, in that same `pulumi up`; and file systems made under the class
    outlive it, so destroy must still sweep them."""
    return sweep_step(
        f"{name}-fsx-sweep",
        SweepArgs(
            cluster_name=cluster.name,
            region=cluster.region,
            stateful_resources=stateful_resources,
            vpc_id=cluster.vpc_id,
            # It finds file systems by this cluster's tag alone and never clears anything else in the VPC.
            owns_vpc=False,
            profile=cluster.aws_profile,
            kinds=frozenset({Kind.FILE_SYSTEM}),
        ),
        parent=parent,
        after=after,
    )


def csi_driver(
    name: str,
    cluster: ClusterHandle,
    controller_role: WorkloadRole | None,
    after: Sequence[pulumi.Resource],
    k8s_opts: pulumi.ResourceOptions,
) -> pulumi.Resource:
    """The FSx CSI driver; with `controller_role`, its controller also creates and deletes file systems for claims.
    It waits for (and on destroy goes before) the system nodes and what is in `after`."""
    controller: dict[str, Any] = cluster.system_placement.values()
    if controller_role is not None:
        controller["serviceAccount"] = {
            # The chart creates it (its default); the name is spelled out because the trust policy names it.
            "name": FSX_CSI_CONTROLLER_SERVICE_ACCOUNT,
            "annotations": controller_role.service_account_annotations,
        }
        controller["extraTags"] = {DYNAMIC_FSX_TAG: cluster.name}
        controller["region"] = cluster.region
    return helm.release(
        f"{name}-fsx-csi",
        versions.FSX_CSI_DRIVER,
        namespace=FSX_CSI_NAMESPACE,
        # The node plugin must run on every node that may mount Lustre, GPU nodes included.
        values={"controller": controller, "node": {"tolerateAllTaints": True}},
        # why: the controller runs on the system nodes. (Its role ARN waits for the policy.)
        opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[*cluster.system_ready, *after])),
    )


def storage_class(
    name: str,
    config: FsxConfig,
    subnet_id: pulumi.Input[str] | None,
    group: aws.ec2.SecurityGroup,
    driver: pulumi.Resource,
    k8s_opts: pulumi.ResourceOptions,
    *,
    stateful_resources: StatefulResources,
) -> str:
    """The StorageClass that makes a file system per claim, in the platform file system's subnet and security group;
    returns its name. Its file systems hold teams' data, so they outlive their claims unless `stateful_resources` is
    destroy (as the gp3-retain class's volumes do); the sweep then keeps them through `pulumi destroy` too."""
    k8s_objects.create(
        f"{name}-fsx-class",
        fsx_storage_class(
            name=FSX_STORAGE_CLASS,
            subnet_id=subnet_id,
            security_group_id=group.id,
            deployment_type=config.deployment_type,
            throughput=config.per_unit_storage_throughput,
            compression=config.compression,
            lustre_version=versions.FSX_LUSTRE_VERSION,
            retain=stateful_resources is not StatefulResources.DESTROY,
        ),
        # why: file systems of this class are deleted by the driver; it must outlive them.
        pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[driver])),
    )
    return FSX_STORAGE_CLASS


def team_volume(
    name: str,
    namespace: str,
    config: FsxConfig,
    file_system: aws.fsx.LustreFileSystem,
    driver: pulumi.Resource,
    cluster: ClusterHandle,
    cleanup_controllers: Sequence[pulumi.Resource],
    k8s_opts: pulumi.ResourceOptions,
    monitoring_namespace: str | None = None,
) -> None:
    """A team namespace with a claim on the file system, through a volume of its own, and a team namespace's
    NetworkPolicies (default deny and the platform's allowances; Prometheus' scrapes from `monitoring_namespace`)."""
    pv_name = f"{config.claim_name}-{namespace}"
    rendered = pulumi.Output.all(file_system.id, file_system.dns_name, file_system.mount_name).apply(
        lambda v: fsx_volume(
            name=pv_name,
            namespace=namespace,
            claim=config.claim_name,
            file_system_id=v[0],
            dns_name=v[1],
            mount_name=v[2],
            capacity_gib=config.storage_capacity_gib,
        )
    )
    # Order, for destroy: the namespace goes before the file system (its pods stop, and its claim goes with it:
    # deleting the claim first would wait on its pvc-protection finalizer for pods that only the namespace removes).
    # The volume goes in the namespace's level: its pv-protection finalizer holds its delete until the claim is
    # gone, and deleting it touches nothing in AWS (reclaim policy Retain).
    volume = k8s_objects.create(
        f"{name}-pv-{namespace}",
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name}, "spec": rendered[0]["spec"]},
        # why: the driver mounts and unmounts the volume.
        pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[driver])),
    )
    # why: whatever teams put here (claims, load balancers) is deleted with the namespace, while the drivers and
    # controllers that delete its AWS side still run, and before the file system it mounts.
    ns = _team_namespace(
        f"{name}-ns-{namespace}",
        namespace,
        pulumi.ResourceOptions.merge(
            k8s_opts,
            pulumi.ResourceOptions(depends_on=[driver, file_system, cluster.ebs_csi_driver, *cleanup_controllers]),
        ),
    )
    k8s_objects.create(
        f"{name}-pvc-{namespace}",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": config.claim_name, "namespace": namespace},
            "spec": rendered[1]["spec"],
        },
        pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[ns, volume], deleted_with=ns)),
    )
    _namespace_guards(name, namespace, ns, k8s_opts, monitoring_namespace)


def _team_namespace(name: str, namespace: str, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """A team namespace, labelled for the team's pod security and network policies."""
    return k8s_objects.create(
        name,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "labels": {**TEAM_POD_SECURITY, netpol.TEAM_LABEL: namespace}},
        },
        opts,
    )


def _namespace_guards(
    name: str,
    namespace: str,
    ns: pulumi.Resource,
    k8s_opts: pulumi.ResourceOptions,
    monitoring_namespace: str | None,
) -> None:
    """What keeps a team namespace in bounds: a quota of no accelerators, and its NetworkPolicies (default deny and
    the platform's allowances; Prometheus' scrapes from `monitoring_namespace`)."""
    in_namespace = pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[ns], deleted_with=ns))
    k8s_objects.create(f"{name}-quota-{namespace}", no_accelerators_quota(namespace), in_namespace)
    for policy, manifest in netpol.team_namespace(namespace, monitoring_namespace=monitoring_namespace).items():
        k8s_objects.create(f"{name}-netpol-{namespace}-{policy}", manifest, in_namespace)
