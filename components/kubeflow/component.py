"""Kubeflow on the platform: the pinned manifests, rendered and changed by the pure modules of this part, registered
object by object under one stage component per stage, with generated credentials and an IRSA role per team."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_random as random

from .. import k8s_objects
from ..certmanager.names import GROUPS as CERT_MANAGER_GROUPS
from ..cluster.handle import ClusterHandle
from ..identity.documents import to_json
from ..identity.roles import WorkloadRole
from ..identity.team_policy import team_s3_policy
from . import fetch, pipelines, pipelines_iam, plan, render
from .access import LOAD_BALANCER_SOURCES_PLACEHOLDER, OIDC_ISSUER_PLACEHOLDER, ip_blocks
from .alb_auth import CLIENT_SECRET_PLACEHOLDER as ALB_CLIENT_SECRET_PLACEHOLDER
from .auth import connector_secret_placeholder, static_user_placeholder
from .config import KubeflowConfig, selected_entries
from .credentials import NAMES
from .objects import MONITORING_GROUP
from .pipelines_store import S3Store
from .register import register
from .staging import Stage, Staged
from .teams import FSX_PLACEHOLDERS, TEAM_SERVICE_ACCOUNT

#: Credentials with a shape of their own (everything else: 32 letters and digits, safe in connection strings).
_ADMIN = "admin_password_bcrypt"
_COOKIE = "oauth2_proxy_cookie_secret"  # oauth2-proxy takes 16, 24 or 32 byte keys


@dataclass(frozen=True)
class FsxForTeams:
    """The platform's FSx file system and CSI driver, for teams' claims."""

    file_system: aws.fsx.LustreFileSystem
    driver: pulumi.Resource


def planned_objects(config: KubeflowConfig, facts: plan.Settings) -> list[Staged]:
    """Every object the part registers, from the verified tree, changed and staged for this platform (`facts`: from
    `config.settings`). Raises TreeError for a missing or altered tree, RenderError when kustomize fails, ValueError
    when the plan's checks refuse it: call it before creating anything (the stack does), so these stop a run first."""
    tree = fetch.tree(config.tree)
    rendered = render.render(tree, selected_entries(config), cache_dir=render.default_render_cache())
    staged = plan.build(rendered, facts)
    for item in staged:  # every object can be registered (a kind with no resource type would fail halfway)
        k8s_objects.check(item.manifest, any_custom=True)
    return staged


@dataclass(frozen=True)
class KubeflowArgs:
    """Kubeflow on a cluster. Fields without a default are required; a None default means the feature is off."""

    #: The cluster to install into: `Cluster.handle`, or `ClusterHandle.from_stack_reference` / `from_existing`.
    cluster: ClusterHandle
    #: Components, teams, access (port-forward or ALB), notebook culling and the pinned tree (`KubeflowConfig`).
    config: KubeflowConfig
    #: What to register: `planned_objects(config, settings(config, ...))`, with the facts of the resources below.
    objects: Sequence[Staged]
    #: The class every Kubeflow claim gets (the platform's gp3 default, named in the settings of `objects`); claims
    #: wait for it and its driver.
    storage_class: pulumi.Resource
    #: The platform's cert-manager release (`components.certmanager`): Kubeflow's issuers and Certificates wait
    #: for it and go before it.
    cert_manager: pulumi.Resource
    #: The bucket teams get a prefix of. Default: None (the stack has no such bucket, and then no teams).
    bucket_name: pulumi.Input[str] | None = None
    #: That bucket's KMS key, which teams then may use through S3. Default: None (SSE-S3, or no bucket).
    bucket_kms_key_arn: pulumi.Input[str] | None = None
    #: The platform's file system, for teams with `fsxClaim` (None: the stack has none; config then refuses them).
    fsx: FsxForTeams | None = None
    #: Controllers that delete what Kubeflow's objects make in AWS (the load balancer controller, for the ALB).
    #: Default: none.
    cleanup_controllers: tuple[pulumi.Resource, ...] = ()
    #: The CIDRs of an existing VPC (`Network.existing_cidrs()`), when the plan's ALB allowance could not name the
    #: ALB's subnets (`network.existing`). Default: None, for a VPC the plan knows or without an ALB.
    vpc_cidrs: pulumi.Input[Sequence[str]] | None = None
    #: Where Kubeflow's pods run (Karpenter's untainted NodePools): its workloads wait for them, and go before them
    #: on destroy, so its controllers still run while team namespaces and their finalizers are cleared. Default: none.
    node_pools: tuple[pulumi.Resource, ...] = ()
    #: The client secret of each of `config.auth.connectors`, by connector id (the stack reads them from its config
    #: as secrets). Default: none (then the config must have no connector).
    connector_secrets: Mapping[str, pulumi.Input[str]] = dataclasses.field(default_factory=dict)
    #: The client secret of the ALB's OIDC action (`config.access.albAuth` of type oidc; the stack reads it from its
    #: config as a secret). Default: None (then the config must not ask for one).
    alb_client_secret: pulumi.Input[str] | None = None
    #: The platform's kube-prometheus-stack release, which installs the monitors' CRDs: Kubeflow's ServiceMonitors
    #: and PodMonitors (planned with `monitoring_namespace`) wait for it and go before it. Default: None (no
    #: monitoring; the plan then has no monitors).
    monitoring: pulumi.Resource | None = None

    def __post_init__(self) -> None:
        if not self.objects:
            raise ValueError("KubeflowArgs.objects is empty: plan them with planned_objects(config, settings(...))")
        if self.monitoring is None and any(o.key.group == MONITORING_GROUP for o in self.objects):
            raise ValueError("KubeflowArgs.objects have monitors (planned with monitoring) but no monitoring release")

    #: Kueue's release when the platform runs it: its webhooks act in team namespaces, so what Kubeflow creates there
    #: waits for them, and goes before them on destroy. Default: None.
    kueue: pulumi.Resource | None = None


class Kubeflow(pulumi.ComponentResource):
    """Kubeflow 26.03.1: every object its own resource, ordered object to object across eight stages."""

    admin_password: pulumi.Output[str]
    #: The generated password of each of `config.auth.staticUsers`, by username (secret).
    user_passwords: dict[str, pulumi.Output[str]]
    team_roles: dict[str, pulumi.Output[str]]
    #: With `pipelines.artifacts: s3`, the ARNs of the Pipelines API server's and UI's roles ("server", "ui").
    pipelines_roles: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: KubeflowArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:kubeflow:Kubeflow", name, None, opts)
        config = args.config
        self._check_client_secrets(args)
        # With S3 artifacts, SeaweedFS is not installed: its generated S3 identity would be used by nothing.
        unused = pipelines.UNUSED_CREDENTIALS if config.pipelines.artifacts == "s3" else frozenset()
        secrets, admin = self._credentials(name, unused)
        self.admin_password = pulumi.Output.secret(admin.result)
        sign_in_values = self._sign_in_values(name, args)
        self.team_roles = {team: self._team_role(name, team, args).arn for team in sorted(config.teams)}
        self.pipelines_roles = self._pipelines_roles(name, args)
        stages = {
            stage: pulumi.ComponentResource(
                "eksml:kubeflow:Stage",
                f"{name}-{stage.name.lower().replace('_', '-')}",
                None,
                pulumi.ResourceOptions(parent=self),
            )
            for stage in Stage
        }
        self._register(args, stages, secrets, {**self._inputs(args), **self._pipelines_inputs(args), **sign_in_values})
        self.register_outputs(
            {
                "adminPassword": self.admin_password,
                "userPasswords": self.user_passwords,
                "teamRoles": self.team_roles,
                "pipelinesRoles": self.pipelines_roles,
            }
        )

    @staticmethod
    def _check_client_secrets(args: KubeflowArgs) -> None:
        """Every client secret the config's sign-in needs is given, and no other."""
        config = args.config
        missing = sorted(set(config.auth.connectors) - set(args.connector_secrets))
        if missing:
            raise ValueError(f"KubeflowArgs.connector_secrets lacks the client secret of: {', '.join(missing)}")
        alb_auth = config.access.alb_auth
        if (alb_auth is not None and alb_auth.type == "oidc") != (args.alb_client_secret is not None):
            raise ValueError(
                "KubeflowArgs.alb_client_secret is the client secret of access.albAuth with type oidc: give it "
                "exactly when the config has one"
            )

    def _sign_in_values(self, name: str, args: KubeflowArgs) -> dict[str, pulumi.Input[Any]]:
        """The values of the sign-in placeholders: each static user's generated password (as a bcrypt hash for Dex),
        the connectors' and the ALB's client secrets."""
        users = {
            user: random.RandomPassword(
                f"{name}-user-{user}-password", length=24, special=False, opts=pulumi.ResourceOptions(parent=self)
            )
            for user in sorted(args.config.auth.static_users)
        }
        self.user_passwords = {user: pulumi.Output.secret(p.result) for user, p in users.items()}
        sign_in_values: dict[str, pulumi.Input[Any]] = {
            static_user_placeholder(user): pulumi.Output.secret(p.bcrypt_hash) for user, p in users.items()
        }
        sign_in_values.update(
            {
                connector_secret_placeholder(key): pulumi.Output.secret(value)
                for key, value in args.connector_secrets.items()
            }
        )
        if args.alb_client_secret is not None:
            sign_in_values[ALB_CLIENT_SECRET_PLACEHOLDER] = pulumi.Output.secret(args.alb_client_secret)
        return sign_in_values

    def _register(
        self,
        args: KubeflowArgs,
        stages: dict[Stage, pulumi.ComponentResource],
        secrets: dict[str, pulumi.Output[str]],
        inputs: dict[str, pulumi.Input[Any]],
    ) -> None:
        """Every planned object, under its stage, after what it needs and so deleted before it."""
        cluster = args.cluster
        register(
            args.objects,
            provider=cluster.kubernetes_provider,
            parent=stages,
            cluster=cluster.eks_cluster,
            secrets=secrets,
            role_arns=self.team_roles,
            inputs=inputs,
            # why: Kubeflow runs on the cluster's nodes and needs its DNS; on destroy it goes before them.
            depends_on=list(cluster.system_ready),
            depends_on_by_kind={
                # why: its controllers run on these pools' nodes; deleted after everything that needs them running.
                "Deployment": list(args.node_pools),
                "StatefulSet": list(args.node_pools),
                # why: claims are provisioned and deleted by the EBS CSI driver through this class.
                "PersistentVolumeClaim": [cluster.ebs_csi_driver, args.storage_class],
                # why: what teams put in a namespace (claims of EBS and fsx-lustre volumes, load balancers) goes with
                # it while the drivers and controllers that delete their AWS side still run.
                "Namespace": [
                    cluster.ebs_csi_driver,
                    *args.cleanup_controllers,
                    *([args.fsx.driver] if args.fsx is not None else []),
                ],
                # why: the load balancer controller makes and deletes the ALB of the Ingress.
                "Ingress": list(args.cleanup_controllers),
                # why: the FSx CSI driver mounts the teams' static volumes; they go before it.
                "PersistentVolume": [args.fsx.driver] if args.fsx is not None else [],
            },
            # why: cert-manager's CRDs and webhooks serve these groups; its release goes after their objects.
            # why: Kueue's webhooks (fail-closed) act in the team namespaces, and its finalizers hold the pods it
            # manages there: a team namespace is made after Kueue serves and deleted while it still runs. Only the
            # team namespaces: Kubeflow's own do not wait for it.
            depends_on_by_namespace=(
                {team: [args.kueue] for team in sorted(args.config.teams)} if args.kueue is not None else None
            ),
            depends_on_by_group={
                **{group: [args.cert_manager] for group in sorted(CERT_MANAGER_GROUPS)},
                # why: its CRDs define the monitors; on destroy the monitors go before the release.
                **({MONITORING_GROUP: [args.monitoring]} if args.monitoring is not None else {}),
            },
        )

    @staticmethod
    def _store(args: KubeflowArgs) -> S3Store | None:
        config = args.config
        if config.pipelines.artifacts != "s3":
            return None
        assert args.bucket_name is not None, "config refuses s3 artifacts without kubeflow.bucket"
        return S3Store(args.cluster.region, {team: spec.s3_prefix for team, spec in sorted(config.teams.items())})

    def _pipelines_inputs(self, args: KubeflowArgs) -> dict[str, pulumi.Input[Any]]:
        """The bucket's name and what is made of it (the teams' pipeline roots and Argo repositories), and the
        Pipelines roles' ARNs."""
        store = self._store(args)
        if store is None or args.bucket_name is None:
            return {}

        def fill(bucket: str) -> dict[str, str]:
            return pipelines.values(store, bucket)

        def pick(key: str) -> pulumi.Output[str]:
            return filled.apply(lambda found: found[key])

        filled = pulumi.Output.from_input(args.bucket_name).apply(fill)
        inputs: dict[str, pulumi.Input[Any]] = {key: pick(key) for key in pipelines.values(store, "bucket")}
        inputs[pipelines.SERVER_ROLE_PLACEHOLDER] = self.pipelines_roles["server"]
        inputs[pipelines.UI_ROLE_PLACEHOLDER] = self.pipelines_roles["ui"]
        return inputs

    def _pipelines_roles(self, name: str, args: KubeflowArgs) -> dict[str, pulumi.Output[str]]:
        """With S3 artifacts, the API server's role (pipeline definitions) and the UI's (reads the teams' runs), each
        assumable only by its service account in `kubeflow`."""
        store = self._store(args)
        if store is None:
            return {}
        cluster = args.cluster
        documents = {"server": pipelines_iam.server_policy, "ui": pipelines_iam.ui_policy}
        accounts = {"server": pipelines.SERVER_ACCOUNT, "ui": pipelines.UI_ACCOUNT}
        roles = {}

        def policy_of(document: Callable[..., dict[str, Any]]) -> pulumi.Output[str]:
            return pulumi.Output.all(args.bucket_name, args.bucket_kms_key_arn).apply(
                lambda v: to_json(document(store, bucket=v[0], kms_key_arn=v[1]))
            )

        for key, document in documents.items():
            policy = policy_of(document)
            roles[key] = cluster.workload_role(
                f"{name}-pipelines-{key}",
                namespace=pipelines.NAMESPACE,
                service_account=accounts[key],
                inline_policies={"s3": policy},
                opts=pulumi.ResourceOptions(parent=self),
            ).arn
        return roles

    @staticmethod
    def _inputs(args: KubeflowArgs) -> dict[str, pulumi.Input[Any]]:
        """Values of the placeholders the pure modules leave for outputs: the cluster's OIDC issuer (as tokens name
        it, `iss`, with the scheme the handle's value leaves out), an existing VPC's CIDRs and the file system's
        identity."""
        inputs: dict[str, pulumi.Input[Any]] = {
            OIDC_ISSUER_PLACEHOLDER: args.cluster.oidc_issuer.apply(lambda i: f"https://{i.removeprefix('https://')}")
        }
        if args.vpc_cidrs is not None:
            inputs[LOAD_BALANCER_SOURCES_PLACEHOLDER] = pulumi.Output.from_input(args.vpc_cidrs).apply(ip_blocks)
        if args.fsx is not None:
            file_system = args.fsx.file_system
            identity = {
                "file_system_id": file_system.id,
                "dns_name": file_system.dns_name,
                "mount_name": file_system.mount_name,
            }
            inputs.update({FSX_PLACEHOLDERS[field_]: value for field_, value in identity.items()})
        return inputs

    def _credentials(
        self, name: str, unused: frozenset[str]
    ) -> tuple[dict[str, pulumi.Output[str]], random.RandomPassword]:
        """Every credential upstream ships a default for, generated (but the `unused`); the admin's as a bcrypt hash
        for Dex."""
        child = pulumi.ResourceOptions(parent=self)
        secrets: dict[str, pulumi.Output[str]] = {}
        admin = random.RandomPassword(f"{name}-admin-password", length=24, special=False, opts=child)
        for credential in NAMES:
            if credential in unused:
                continue
            if credential == _ADMIN:
                secrets[credential] = admin.bcrypt_hash
                continue
            password = random.RandomPassword(
                f"{name}-{credential.replace('_', '-')}", length=32, special=False, opts=child
            )
            secrets[credential] = password.result
        assert _COOKIE in secrets  # 32 characters: one of the lengths oauth2-proxy accepts
        return secrets, admin

    def _team_role(self, name: str, team: str, args: KubeflowArgs) -> WorkloadRole:
        """The team's IRSA role: assumable only by its namespace's default-editor account, limited to its prefix."""
        cluster, config = args.cluster, args.config.teams[team]
        assert args.bucket_name is not None, "config refuses teams without kubeflow.bucket"
        policy = pulumi.Output.all(cluster.partition, args.bucket_name, args.bucket_kms_key_arn).apply(
            lambda v: to_json(
                team_s3_policy(
                    partition=v[0], region=cluster.region, bucket=v[1], prefix=config.s3_prefix, kms_key_arn=v[2]
                )
            )
        )
        return cluster.workload_role(
            f"{name}-team-{team}",
            namespace=team,
            service_account=TEAM_SERVICE_ACCOUNT,
            inline_policies={"s3": policy},
            opts=pulumi.ResourceOptions(parent=self),
        )
