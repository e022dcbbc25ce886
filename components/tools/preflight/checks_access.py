"""Pure checks: who runs the deployment, whether they (and the admins) will reach the cluster, and whether the names
the stack gives AWS objects are free."""

from __future__ import annotations

from collections.abc import Mapping

from ...platform.config import PlatformConfig
from .reads import Identity
from .results import CheckResult, Status, failed, passed, warned, worst


def region_partition(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def creator_principal(arn: str) -> str:
    """The IAM principal EKS records as the cluster creator: an assumed-role session stands for its role."""
    head, _, resource = arn.partition(":assumed-role/")
    if not resource:
        return arn
    role = resource.split("/", 1)[0]
    partition_and_account = head.split(":")
    return f"arn:{partition_and_account[1]}:iam::{partition_and_account[4]}:role/{role}"


def identity_check(identity: Identity, region: str) -> CheckResult:
    expected = region_partition(region)
    evidence = f"{identity.arn} (account {identity.account}, partition {identity.partition}); stack region {region}"
    if identity.partition != expected:
        return failed(
            "identity",
            evidence,
            f"{region} is in partition {expected}: use credentials of an account there, or another aws:region",
        )
    if identity.arn.endswith(":root"):
        return warned(
            "identity",
            evidence,
            "the root user would become the cluster creator; deploy with an IAM role (e.g. an administrator role)",
        )
    return passed("identity", evidence)


def region_check(region: str, opt_in: str | None) -> CheckResult:
    if opt_in is None:
        return failed("region", f"EC2 knows no region {region}", "set aws:region to an AWS region")
    if opt_in == "not-opted-in":
        return failed(
            "region",
            f"{region} is an opt-in region this account has not enabled",
            f"enable it: aws account enable-region --region-name {region}",
        )
    return passed("region", f"{region} is enabled ({opt_in})")


def cluster_access_check(
    config: PlatformConfig, identity: Identity, principals_found: Mapping[str, bool | None]
) -> CheckResult:
    """Whether the deployer and the admins can reach the API: pulumi-eks gives the creator an admin access entry,
    `cluster.adminPrincipals` get theirs; EKS refuses an access entry for a principal that does not exist.

    `principals_found` maps each admin principal key to whether it exists (None: not checkable from this account).
    """
    creator = creator_principal(identity.arn)
    notes = [f"creator {creator} gets an admin access entry"]
    status, fixes = Status.PASS, []
    for key, arn in sorted(config.cluster.admin_principals.items()):
        found = principals_found.get(key)
        partition = arn.split(":")[1]
        if partition != identity.partition:
            notes.append(f"adminPrincipals.{key} is in partition {partition}")
            status = Status.FAIL
            fixes.append(f"cluster.adminPrincipals.{key}: use a principal of partition {identity.partition}")
        elif found is None:
            notes.append(f"adminPrincipals.{key} is in another account (not checked)")
            status = worst([status, Status.WARN])
            fixes.append(f"make sure {arn} exists; EKS refuses access entries for principals that do not")
        elif not found:
            notes.append(f"adminPrincipals.{key} {arn} does not exist")
            status = Status.FAIL
            fixes.append(f"create {arn} or remove cluster.adminPrincipals.{key}: EKS refuses the access entry")
        else:
            notes.append(f"adminPrincipals.{key} exists")
    if not config.cluster.admin_principals:
        notes.append("no adminPrincipals: only the creator can reach the API")
    endpoint = config.cluster.endpoint
    if endpoint.public:
        cidrs = ", ".join(str(c) for c in endpoint.public_cidrs)
        notes.append(f"public endpoint open to {cidrs}")
    else:
        notes.append("private endpoint only")
        status = worst([status, Status.WARN])
        fixes.append(
            "pulumi up installs charts through the API: run it from inside the VPC or a network peered with it, or "
            "bootstrap with cluster.endpoint.public: true and publicCidrs limited to your runner"
        )
    return CheckResult("cluster-access", status, "; ".join(notes), "; ".join(fixes))


# ----------------------------------------------------------------------------------------------------- names


def _owned(tags: Mapping[str, str], config: PlatformConfig) -> bool:
    """Whether an object carries this stack's standard tags (the provider's default tags, `components.tags`)."""
    return tags.get("project") == config.project and tags.get("stack") == config.stack


def _tag_text(tags: Mapping[str, str]) -> str:
    shown = {k: tags[k] for k in ("project", "stack") if k in tags}
    return ", ".join(f"{k}={v}" for k, v in shown.items()) or "no project/stack tags"


def cluster_name_check(config: PlatformConfig, tags: Mapping[str, str] | None) -> CheckResult:
    name = config.cluster_name
    if tags is None:
        return passed("name/cluster", f"no EKS cluster named {name}")
    if _owned(tags, config):
        return passed("name/cluster", f"{name} exists and carries this stack's tags: an update, not a first deployment")
    return failed(
        "name/cluster",
        f"an EKS cluster named {name} exists ({_tag_text(tags)}); CreateCluster would fail with ResourceInUseException",
        f"set cluster.name to a free name, or delete the leftover: aws eks delete-cluster --name {name}",
    )


def control_plane_log_group(cluster_name: str) -> str:
    """The group EKS writes control-plane logs to (components/cluster/component.py creates it itself, with a
    retention)."""
    return f"/aws/eks/{cluster_name}/cluster"


def log_group_check(config: PlatformConfig, tags: Mapping[str, str] | None) -> CheckResult:
    name = control_plane_log_group(config.cluster_name)
    if tags is None:
        return passed("name/log-group", f"no log group {name}")
    if _owned(tags, config):
        return passed("name/log-group", f"{name} exists and carries this stack's tags: an update")
    return failed(
        "name/log-group",
        f"log group {name} exists ({_tag_text(tags)}), left by an earlier cluster of this name (EKS creates it when "
        "control-plane logging is on); creating it fails with ResourceAlreadyExistsException",
        f"export what you need, then aws logs delete-log-group --log-group-name {name}; or set cluster.name",
    )


def interruption_queue_prefixes(cluster_name: str) -> tuple[str, ...]:
    """Name prefixes of the Karpenter interruption queue. Pulumi names it `<logical name>-<7 hex>`: the Karpenter
    part's name (`karpenter`, components/platform/aliases.py) plus `-interruption`
    (components/karpenter/component.py); stacks first deployed with 0.1 keep their
    `<cluster name>-karpenter-interruption-` queue through the part's alias."""
    return ("karpenter-interruption-", f"{cluster_name}-karpenter-interruption-")


def interruption_queue_check(
    config: PlatformConfig, queues: Mapping[str, Mapping[str, str]], cluster_tags: Mapping[str, str] | None
) -> CheckResult:
    """The queue is auto-named, so its name cannot collide. What can be wrong is a queue of this stack (its tags)
    while the stack's cluster does not exist: a leftover of an earlier deployment, whose EventBridge rules may still
    feed it. Queues of other stacks share the prefix and are none of this stack's business."""
    name = "name/interruption-queue"
    ours = sorted(url.rsplit("/", 1)[-1] for url, tags in queues.items() if _owned(tags, config))
    deployed = cluster_tags is not None and _owned(cluster_tags, config)
    if not ours:
        others = len(queues)
        return passed(
            name,
            "no interruption queue tagged for this stack"
            + (f" ({others} of other stacks share the name prefix)" if others else "")
            + "; the new queue is auto-named karpenter-interruption-<7 hex>",
        )
    if deployed and len(ours) == 1:
        return passed(name, f"{ours[0]} is this stack's: an update")
    why = "the stack's cluster does not exist" if not deployed else "the stack has more than one"
    return warned(
        name,
        f"queues tagged project={config.project}, stack={config.stack}: {', '.join(ours)}; {why}, so they are "
        "leftovers of an earlier deployment (with their EventBridge rules)",
        "delete the leftover queues and the EventBridge rules feeding them (aws sqs delete-queue --queue-url <url>)",
    )
