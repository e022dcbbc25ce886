"""Team vision's stack: attach to the platform stack through its outputs, then create the team's namespace (quota,
network policies, FSx claims), its IRSA identity, its NodePool, its Kueue queue and its Kubeflow Profile.

`pulumi up` here runs after the platform's; offline: `python -m components.preview --project-dir examples/team-stack
--stack prod --out build/preview/team-prod
--stack-reference acme/eks-ml-platform/prod=examples/team-stack/platform-outputs.prod.json`
(and the same with `dev` for the dev stack, which has the Profile).
"""

import pulumi
import pulumi_aws as aws
from eks_ml_platform import (
    ClusterHandle,
    TeamArgs,
    TeamIdentity,
    TeamIdentityArgs,
    TeamNamespace,
    TeamNodePool,
    TeamQueues,
    TeamQueuesArgs,
)
from eks_ml_platform.cluster.attach import read_outputs
from eks_ml_platform.config.errors import ConfigError, ConfigIssue
from eks_ml_platform.tags import standard_tags
from eks_ml_platform.team.component import TeamProfile, TeamProfileArgs
from eks_ml_platform.team.config import parse_team_config
from eks_ml_platform.team.offer import OFFER_OUTPUTS, parse_offer
from eks_ml_platform.team.plan import plan_team


def main() -> None:
    raw = {**pulumi.runtime.get_config_env(), **pulumi.runtime.config.CONFIG.get()}
    try:
        config = parse_team_config(raw, project=pulumi.get_project(), stack=pulumi.get_stack())
        platform = pulumi.StackReference("platform", stack_name=config.platform_stack)
        offer = parse_offer(
            read_outputs(platform, OFFER_OUTPUTS, stack=config.platform_stack), stack=config.platform_stack
        )
        if offer.region != config.region:
            raise ConfigError(
                [
                    ConfigIssue(
                        path="aws:region",
                        message=f"the platform runs in {offer.region}; a team stack deploys there too",
                    )
                ]
            )
        plan = plan_team(config.team, offer)
    except ConfigError as error:
        raise pulumi.RunError(str(error)) from None

    tags = standard_tags(project=config.project, stack=config.stack, owner=config.owner, cost_center=config.cost_center)
    provider = aws.Provider(
        "aws", region=config.region, profile=config.profile, default_tags=aws.ProviderDefaultTagsArgs(tags=tags)
    )
    cluster = ClusterHandle.from_stack_reference(platform, aws_profile=config.profile, provider=provider)
    opts = pulumi.ResourceOptions(providers=[provider])

    namespace = TeamNamespace("namespace", TeamArgs(cluster=cluster, plan=plan), opts)
    identity = TeamIdentity("identity", TeamIdentityArgs(cluster=cluster, plan=plan, namespace=namespace), opts)
    if plan.node_pool_manifest is not None:
        TeamNodePool("pool", TeamArgs(cluster=cluster, plan=plan), opts)
    if plan.queues is not None:
        TeamQueues(
            "queues",
            TeamQueuesArgs(
                cluster=cluster,
                queues={config.team.name: plan.queues},
                # why: the LocalQueue goes in the team's namespace.
                after=[namespace.namespace],
                flavors=[plan.flavor] if plan.flavor is not None else [],
            ),
            opts,
        )
    models: dict[str, str] = {}
    if config.team.kubeflow is not None:
        profile = TeamProfile(
            "profile", TeamProfileArgs(cluster=cluster, plan=plan, namespace=namespace, identity=identity), opts
        )
        models = profile.model_paths

    pulumi.export("namespace", namespace.name)
    pulumi.export("serviceAccount", config.team.service_account_name)
    pulumi.export("roleArn", identity.role_arn)
    pulumi.export("nodePool", plan.node_pool_manifest["metadata"]["name"] if plan.node_pool_manifest else None)
    pulumi.export("gpuSchedulerName", offer.gpu_scheduler_name)
    pulumi.export("claims", sorted(plan.claims))
    pulumi.export("kubeflowProfile", config.team.name if config.team.kubeflow is not None else None)
    pulumi.export("models", models)  # each published model's path on the Kubeflow gateway


main()
