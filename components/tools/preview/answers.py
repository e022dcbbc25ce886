"""What the mocks answer: deterministic outputs for every resource the platform registers, and the data sources it
calls (as the providers and AWS would answer them for the account in `account`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pulumi.runtime import mocks as pulumi_mocks

from ... import aws_names
from ...identity.documents import dns_suffix
from .account import ACCOUNT_ID, READABLE, ExistingAccount, UnknownToAccount

#: How a value that is only known after a real deployment is shown (as `pulumi preview` shows `output<string>`).
UNKNOWN = "[unknown]"


class UnexpectedCall(Exception):
    """The program called a data source the mocks do not answer: add it here deliberately, or don't call it."""


#: Who runs the preview unless a test says otherwise: an IAM user that appears in no stack file.
DEFAULT_CALLER = f"arn:aws:iam::{ACCOUNT_ID}:user/preview"


def _token_exec(cluster_name: str, *, profile: str | None) -> dict[str, Any]:
    """The exec credential plugin of a pulumi-eks kubeconfig: the AWS CLI's `eks get-token`."""
    plugin: dict[str, Any] = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "aws",
        "args": ["eks", "get-token", "--cluster-name", cluster_name, "--output", "json"],
    }
    if profile:
        plugin["env"] = [{"name": "AWS_PROFILE", "value": profile}]
    return plugin


def _short_hex(*parts: str, length: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


#: AWS id prefixes by resource type, so ids in the preview look like what AWS returns (and are deterministic).
_ID_PREFIXES = {
    "aws:ec2/vpc:Vpc": "vpc-",
    "aws:ec2/subnet:Subnet": "subnet-",
    "aws:ec2/internetGateway:InternetGateway": "igw-",
    "aws:ec2/natGateway:NatGateway": "nat-",
    "aws:ec2/eip:Eip": "eipalloc-",
    "aws:ec2/routeTable:RouteTable": "rtb-",
    "aws:ec2/securityGroup:SecurityGroup": "sg-",
    "aws:ec2/launchTemplate:LaunchTemplate": "lt-",
    "aws:fsx/lustreFileSystem:LustreFileSystem": "fs-",
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": "dra-",
}


#: A CustomResourceDefinition's outputs are its identity only. Its schema is over half of all the bytes the stack
#: registers, and the SDK's typed translation of that schema back into outputs costs about 0.6 s of every preview
#: with Kubeflow; nothing reads a CRD's spec back (a program that did would get None and fail on it). Its inputs,
#: and so the manifests, resources.json and every check, keep the whole object.
_CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
_CRD_OUTPUTS = ("apiVersion", "kind", "metadata")


class PlatformMocks(pulumi_mocks.Mocks):
    """Deterministic outputs for every resource, and answers for the data sources the platform calls."""

    def __init__(
        self,
        region: str,
        *,
        caller_arn: str = DEFAULT_CALLER,
        existing_clusters: Mapping[str, Mapping[str, str]] | None = None,
        stack_references: Mapping[str, Mapping[str, Any]] | None = None,
    ):
        """`caller_arn` is the identity running the program (an `assumed-role` ARN for a role session);
        `existing_clusters` maps the names of EKS clusters that already exist in the account to their tags;
        `stack_references` maps the stacks the program may reference (`org/project/stack`) to their recorded
        outputs (secret values as REDACTED)."""
        self.region = region
        self.partition = (
            "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"
        )
        self.caller_arn = caller_arn
        self.existing_clusters = dict(existing_clusters or {})
        self.account = ExistingAccount(region, self.partition, self.existing_clusters, stack_references or {})
        #: The kubeconfig of each pulumi-eks cluster, by logical name (its methods are answered from it).
        self.kubeconfigs: dict[str, str] = {}

    def issuer_arn(self, arn: str) -> str:
        """As iam:GetSessionContext answers: an assumed-role session's role, any other ARN as it is."""
        head, _, rest = arn.partition(":assumed-role/")
        if not rest:
            return arn
        return f"{head.replace(':sts:', ':iam:')}:role/{rest.split('/')[0]}"

    def creator_of(self, cluster_name: str) -> str | None:
        """Who EKS admits as the creator of a cluster: whoever creates it, or the creator an existing one records."""
        if cluster_name in self.existing_clusters:
            return self.existing_clusters[cluster_name].get("eksml.io/created-by")
        return self.issuer_arn(self.caller_arn)

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        try:
            if args.typ == "pulumi:pulumi:StackReference":
                return self.account.stack_reference(args.inputs["name"])
            if args.resource_id:  # a read (`Resource.get`) of what exists outside the program
                return args.resource_id, self.account.read(args.typ, args.resource_id)
        except UnknownToAccount as error:
            raise UnexpectedCall(str(error)) from None
        inputs = dict(args.inputs)
        if not args.custom and args.typ != "eks:index:Cluster":
            return None, {}
        if args.typ == _CRD_TYPE:
            return _short_hex(args.typ, args.name), {key: inputs[key] for key in _CRD_OUTPUTS if key in inputs}
        resource_id = _ID_PREFIXES.get(args.typ, "") + _short_hex(args.typ, args.name)
        state = {**inputs}
        # As the provider's Check does: name what the program left unnamed, and refuse a name past the type's limit.
        physical = aws_names.checked_name(args.typ, args.name, inputs)
        if physical is not None:
            state[aws_names.NAME_RULES[args.typ].property] = physical
        state.setdefault("name", inputs.get("name") or f"{args.name}-{_short_hex(args.name, length=7)}")
        state.setdefault("arn", self._arn(args.typ, state["name"], resource_id))
        extra = self._outputs(args.typ, args.name, inputs, resource_id)
        if args.typ in READABLE and isinstance(cluster := inputs.get("clusterName"), str):
            # pulumi-aws ids an EKS add-on and node group `<cluster>:<name>` (the id `import` and `.get` take), so a
            # read by another stack finds what this one made.
            resource_id = f"{cluster}:{state.get(READABLE[args.typ]) or state['name']}"
        return resource_id, {**state, **extra}

    def _arn(self, type_: str, name: str, resource_id: str) -> str:
        service = type_.split(":")[1].split("/")[0]
        kind = type_.rsplit(":", 1)[-1].lower()
        if service == "iam":
            return f"arn:{self.partition}:iam::{ACCOUNT_ID}:{kind}/{name}"
        return f"arn:{self.partition}:{service}:{self.region}:{ACCOUNT_ID}:{kind}/{resource_id}"

    def _outputs(self, type_: str, name: str, inputs: dict[str, Any], resource_id: str) -> dict[str, Any]:
        if type_ == "eks:index:Cluster":
            cluster_name = inputs.get("name", name)
            issuer = f"oidc.eks.{self.region}.amazonaws.com/id/{_short_hex(cluster_name, length=32).upper()}"
            endpoint = f"https://{_short_hex(cluster_name, length=32).upper()}.gr7.{self.region}.eks.amazonaws.com"
            kubeconfig = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": "Q0E="}}
                ],
                "contexts": [{"name": "aws", "context": {"cluster": cluster_name, "user": "aws"}}],
                "current-context": "aws",
                "users": [{"name": "aws", "user": {"exec": _token_exec(cluster_name, profile=None)}}],
            }
            self.kubeconfigs[name] = json.dumps(kubeconfig, sort_keys=True)
            return {
                "kubeconfigJson": self.kubeconfigs[name],
                "kubeconfig": kubeconfig,
                "oidcIssuer": issuer,
                "oidcProviderUrl": f"https://{issuer}",
                "oidcProviderArn": f"arn:{self.partition}:iam::{ACCOUNT_ID}:oidc-provider/{issuer}",
                "clusterSecurityGroupId": "sg-" + _short_hex(cluster_name, "cluster-sg"),
                "nodeSecurityGroupId": "sg-" + _short_hex(cluster_name, "cluster-sg"),
            }
        if type_ == "aws:kms/key:Key":
            return {
                "keyId": resource_id,
                "arn": f"arn:{self.partition}:kms:{self.region}:{ACCOUNT_ID}:key/{resource_id}",
            }
        if type_ == "aws:ec2/launchTemplate:LaunchTemplate":
            return {"latestVersion": 1, "defaultVersion": 1}
        if type_ == "aws:s3/bucket:Bucket":
            bucket = aws_names.checked_name(type_, name, inputs)
            return {"arn": f"arn:{self.partition}:s3:::{bucket}"}
        if type_ == "aws:fsx/lustreFileSystem:LustreFileSystem":
            return {
                "dnsName": f"{resource_id}.fsx.{self.region}.amazonaws.com",
                "mountName": _short_hex(name, length=8),
            }
        if type_ == "random:index/randomPassword:RandomPassword":
            # bcrypt's shape ($2a$, cost, 53 characters of salt and hash), as pulumi-random's bcryptHash output
            return {
                "result": "preview-" + _short_hex(name, length=24),
                "bcryptHash": "$2a$10$" + _short_hex(name, "bcrypt", length=53),
            }
        if type_ == "aws:sqs/queue:Queue":
            # SQS addresses a queue by its URL (pulumi-aws: the queue's id and `url`); QueuePolicy requires it.
            queue = aws_names.checked_name(type_, name, inputs)
            return {"url": f"https://sqs.{self.region}.amazonaws.com/{ACCOUNT_ID}/{queue}"}
        if type_ == "aws:ec2/vpc:Vpc":
            return {"defaultSecurityGroupId": "sg-" + _short_hex(name, "default")}
        return {}

    def eks_inner_cluster(
        self, *, urn: str, component_name: str, inputs: dict[str, Any]
    ) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """Id, inputs and outputs of the aws.eks.Cluster a pulumi-eks Cluster component creates.

        pulumi-eks runs as a remote component, so its children never reach these mocks. This one is needed because
        other resources depend on it directly (ClusterHandle.name), and it is described with the inputs pulumi-eks
        passes on, so the policies see the real cluster's settings.
        """
        cluster_name = inputs.get("name", component_name)
        aws_names.checked_name("aws:eks/cluster:Cluster", f"{component_name}-eksCluster", {"name": cluster_name})
        public = inputs.get("endpointPublicAccess")
        vpc_config = {
            "endpointPublicAccess": public,
            "endpointPrivateAccess": inputs.get("endpointPrivateAccess"),
            "subnetIds": inputs.get("privateSubnetIds"),
        }
        if public and inputs.get("publicAccessCidrs"):
            vpc_config["publicAccessCidrs"] = inputs["publicAccessCidrs"]
        cluster_inputs = {
            "name": cluster_name,
            "version": inputs.get("version"),
            "vpcConfig": vpc_config,
            "enabledClusterLogTypes": inputs.get("enabledClusterLogTypes"),
            "accessConfig": {"authenticationMode": inputs.get("authenticationMode")},
            "bootstrapSelfManagedAddons": inputs.get("bootstrapSelfManagedAddons"),
            "deletionProtection": inputs.get("deletionProtection"),
            "kubernetesNetworkConfig": {"serviceIpv4Cidr": inputs.get("kubernetesServiceIpAddressRange")},
        }
        if inputs.get("encryptionConfigKeyArn"):
            cluster_inputs["encryptionConfig"] = {
                "provider": {"keyArn": inputs["encryptionConfigKeyArn"]},
                "resources": ["secrets"],
            }
        arn = f"arn:{self.partition}:eks:{self.region}:{ACCOUNT_ID}:cluster/{cluster_name}"
        outputs = {**cluster_inputs, "arn": arn, "id": cluster_name}
        return cluster_name, {k: v for k, v in cluster_inputs.items() if v is not None}, outputs

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """The data source's answer, and no check failures."""
        return self.answer(args), []

    def answer(self, args: pulumi_mocks.MockCallArgs) -> dict[str, Any]:
        if args.token == "aws:index/getPartition:getPartition":
            return {"id": self.partition, "partition": self.partition, "dnsSuffix": dns_suffix(self.partition)}
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {"accountId": ACCOUNT_ID, "arn": self.caller_arn, "id": ACCOUNT_ID, "userId": "AIDAPREVIEW"}
        if args.token == "aws:iam/getSessionContext:getSessionContext":
            arn = args.args["arn"]
            issuer = self.issuer_arn(arn)
            return {"arn": arn, "issuerArn": issuer, "issuerName": issuer.rsplit("/", 1)[-1], "id": arn}
        if args.token == "aws:ec2/getVpc:getVpc":
            # Only a VPC the stack file names (`network.existing`) is looked up; its CIDR is the account's to tell.
            association = {"associationId": "vpc-cidr-assoc-preview", "cidrBlock": UNKNOWN, "state": "associated"}
            return {"id": args.args["id"], "cidrBlock": UNKNOWN, "cidrBlockAssociations": [association]}
        if args.token == "aws:eks/getClusters:getClusters":
            return {"names": sorted(self.existing_clusters), "id": self.region}
        try:
            if (existing := self.account.call(args.token, args.args)) is not None:
                return existing
        except UnknownToAccount as error:
            raise UnexpectedCall(str(error)) from None
        if args.token == "eks:index:Cluster/getKubeconfig":
            # As pulumi-eks's method: the cluster's kubeconfig whose token command runs under the given profile.
            kubeconfig = json.loads(self.kubeconfigs[args.args["__self__"]])
            kubeconfig["users"][0]["user"]["exec"] = _token_exec(
                kubeconfig["clusters"][0]["name"], profile=args.args.get("profileName")
            )
            return {"result": json.dumps(kubeconfig, sort_keys=True)}
        raise UnexpectedCall(f"the mocks do not answer {args.token} (args {args.args})")
