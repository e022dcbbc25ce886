"""A team on a platform another stack runs: its namespace (with its FSx claims), its IRSA identity, its NodePool and
its Kubeflow Profile.

A team project composes them from a plan (`components.team.plan.plan_team`), which checked the team against what
the platform offers. Each takes the platform's ClusterHandle (`ClusterHandle.from_stack_reference`). With the
team's `kubeflow` section the plan gives the namespace the labels and `owner` annotation the profile controller
expects, `TeamIdentity` makes the role and service account for `default-editor` (what a Profile's pods run as), and
`TeamProfile` creates the Profile that points the controller at both.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from .. import k8s_objects
from ..cluster.handle import ClusterHandle
from ..identity.documents import to_json
from ..identity.roles import WorkloadRole
from ..identity.team_policy import team_s3_policy
from ..karpenter.validation import delete_timeout
from ..kserve.publish import ModelRoute, ModelRouteArgs
from ..kserve.route import ModelRouteSpec
from .namespace import service_account
from .plan import TeamPlan
from .profile import team_pod_defaults, team_profile


@dataclass(frozen=True)
class TeamArgs:
    """A team's namespace or NodePool; both fields are required."""

    #: The platform's cluster: `ClusterHandle.from_stack_reference` (or `Cluster.handle` in the same program).
    cluster: ClusterHandle
    #: The team checked against what the platform offers (`components.team.plan.plan_team`).
    plan: TeamPlan


class TeamNamespace(pulumi.ComponentResource):
    """The team's namespace: Pod Security level, quota, default requests, default-deny network policies with the
    platform's allowances, and its FSx claims."""

    namespace: pulumi.Resource
    name: str

    def __init__(self, name: str, args: TeamArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:team:TeamNamespace", name, None, opts)
        plan = args.plan
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.cluster.kubernetes_provider)
        volumes = {
            key: k8s_objects.create(f"{name}-pv-{key}", volume, k8s_opts)
            for key, volume in sorted(plan.volumes.items())
        }
        self.name = plan.team.name
        self.namespace = k8s_objects.create(
            f"{name}-namespace",
            plan.namespace["namespace"],
            # why: on destroy the namespace (and the claims in it) goes before the volumes its claims bind; deleting
            # a claim on its own would wait on pvc-protection for pods only the namespace's deletion removes.
            pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=list(volumes.values()))),
        )
        # In the namespace and owning nothing outside the cluster: they go with it.
        in_namespace = pulumi.ResourceOptions.merge(
            k8s_opts, pulumi.ResourceOptions(depends_on=[self.namespace], deleted_with=self.namespace)
        )
        for key, manifest in sorted(plan.namespace.items()):
            if key != "namespace":
                k8s_objects.create(f"{name}-{key}", manifest, in_namespace)
        # A claim of the platform's FSx class is a file system of its own: the platform's CSI driver deletes it with
        # the claim, so team stacks are destroyed before the platform.
        for key, claim in sorted(plan.claims.items()):
            bound = [volumes[key]] if key in volumes else []
            k8s_objects.create(
                f"{name}-claim-{key}",
                claim,
                pulumi.ResourceOptions.merge(in_namespace, pulumi.ResourceOptions(depends_on=bound)),
            )
        self.register_outputs({"namespace": self.name})


@dataclass(frozen=True)
class TeamIdentityArgs:
    """A team's identity; every field is required."""

    #: The platform's cluster: `ClusterHandle.from_stack_reference` (or `Cluster.handle` in the same program).
    cluster: ClusterHandle
    #: The team checked against what the platform offers (`components.team.plan.plan_team`).
    plan: TeamPlan
    #: The team's namespace: the service account is made in it, and deleted with it.
    namespace: TeamNamespace


class TeamIdentity(pulumi.ComponentResource):
    """The team's service account and the role only it may assume (IRSA, or EKS Pod Identity as the platform runs),
    allowed the team's bucket prefix."""

    role: WorkloadRole
    role_arn: pulumi.Output[str]
    service_account: pulumi.Resource

    def __init__(self, name: str, args: TeamIdentityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:team:TeamIdentity", name, None, opts)
        cluster, plan, team = args.cluster, args.plan, args.plan.team
        policies = {}
        if plan.bucket is not None and plan.s3_prefix is not None:
            # The policy the platform's Kubeflow teams get too (`team_s3_policy`, as the Kubeflow component builds it).
            bucket, prefix, key = plan.bucket, plan.s3_prefix, plan.bucket_kms_key_arn
            policies["s3"] = cluster.partition.apply(
                lambda partition: to_json(
                    team_s3_policy(
                        partition=partition, region=cluster.region, bucket=bucket, prefix=prefix, kms_key_arn=key
                    )
                )
            )
        self.role = cluster.workload_role(
            name,
            namespace=team.name,
            service_account=team.service_account_name,
            inline_policies=policies,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.role_arn = self.role.arn
        namespace = args.namespace.namespace
        self.service_account = k8s_objects.create(
            f"{name}-service-account",
            service_account(team, self.role.service_account_annotations),
            pulumi.ResourceOptions(
                parent=self, provider=cluster.kubernetes_provider, depends_on=[namespace], deleted_with=namespace
            ),
        )
        self.register_outputs({"roleArn": self.role_arn})


class TeamNodePool(pulumi.ComponentResource):
    """The team's NodePool: one of the platform's kinds, capped no higher than the platform's, tainted and labelled
    for the team."""

    node_pool: pulumi.Resource

    def __init__(self, name: str, args: TeamArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:team:TeamNodePool", name, None, opts)
        plan = args.plan
        assert plan.node_pool is not None, "the team has no nodePool"
        assert plan.node_pool_manifest is not None, "the team has no nodePool"
        self.node_pool = k8s_objects.create(
            f"{name}-nodepool",
            plan.node_pool_manifest,
            pulumi.ResourceOptions(
                parent=self,
                provider=args.cluster.kubernetes_provider,
                # Deleting the pool drains and terminates its nodes, each bounded by the grace period; Karpenter (the
                # platform's) must still run: team stacks are destroyed before the platform.
                custom_timeouts=pulumi.CustomTimeouts(delete=delete_timeout([plan.node_pool.termination_grace_period])),
            ),
        )
        self.register_outputs({"nodePool": plan.node_pool_manifest["metadata"]["name"]})


@dataclass(frozen=True)
class TeamProfileArgs:
    """A team's Kubeflow Profile; every field is required."""

    #: The platform's cluster: `ClusterHandle.from_stack_reference` (or `Cluster.handle` in the same program).
    cluster: ClusterHandle
    #: The team checked against what the platform offers (`components.team.plan.plan_team`).
    plan: TeamPlan
    #: The namespace the Profile adopts; the Profile is made after it and deleted before it.
    namespace: TeamNamespace
    #: The identity whose role the Profile annotates `default-editor` with; made before the Profile, deleted after.
    identity: TeamIdentity


class TeamProfile(pulumi.ComponentResource):
    """The team's Kubeflow Profile: owned by `kubeflow.owner`, its GPU quota the team's, `default-editor` annotated
    with the team's role; and the `access-ml-pipeline` PodDefault. The platform's profile controller adopts the
    namespace and handles the rest. When the platform's Pipelines keep artifacts in S3, the namespace's Pipelines
    config (its pipeline root under the team's prefix, read and written with the team's role), which in that mode no
    controller of the platform writes. Each of `kubeflow.models` is published on the gateway (`ModelRoute`)."""

    profile: pulumi.Resource
    #: Each published model's path on the gateway (`kubeflow.models`), by InferenceService name.
    model_paths: dict[str, str]

    def __init__(self, name: str, args: TeamProfileArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:team:TeamProfile", name, None, opts)
        team = args.plan.team
        assert team.kubeflow is not None, "the team has no kubeflow section"
        self.profile = k8s_objects.create(
            f"{name}-profile",
            team_profile(team, args.identity.role_arn, args.plan.gpu_share.ceiling, args.plan.neuron_quota),
            pulumi.ResourceOptions(
                parent=self,
                provider=args.cluster.kubernetes_provider,
                # why: the controller adopts only an existing namespace, and makes default-editor itself unless the
                # team's exists (Pulumi's create would then fail). Cluster-scoped, the Profile is not deleted with the
                # namespace: destroy deletes it first, while the controller can still clear its finalizer there.
                depends_on=[args.namespace.namespace, args.identity.service_account],
            ),
            any_custom=True,  # Kubeflow's CRD, installed by the platform
        )
        namespace = args.namespace.namespace
        # The namespace's PodDefaults (Kubeflow's CRD) and, on an S3 platform, its Pipelines config: made in the
        # namespace once it exists, and gone with it.
        in_namespace = [
            (manifest["metadata"]["name"], manifest, True)
            for manifest in team_pod_defaults(team, queueing=args.plan.queues is not None)
        ] + [(key, manifest, False) for key, manifest in sorted((args.plan.pipelines or {}).items())]
        for key, manifest, custom in in_namespace:
            k8s_objects.create(
                f"{name}-{key}",
                manifest,
                pulumi.ResourceOptions(
                    parent=self,
                    provider=args.cluster.kubernetes_provider,
                    depends_on=[namespace],
                    deleted_with=namespace,
                ),
                any_custom=custom,
            )
        # The models the team publishes on the gateway: a Profile's namespace is the one where the gateway's
        # requests carry the user's identity to a sidecar that checks it.
        self.model_paths = {
            model: ModelRoute(
                f"{name}-model-{model}",
                ModelRouteArgs(
                    cluster=args.cluster,
                    spec=ModelRouteSpec(
                        namespace=team.name,
                        inference_service=model,
                        token_clients=tuple(settings.token_clients),
                        predictor_port=settings.port,
                    ),
                    namespace=namespace,
                ),
                pulumi.ResourceOptions(parent=self),
            ).path
            for model, settings in sorted(team.kubeflow.models.items())
        }
        self.register_outputs({"profile": team.name})
