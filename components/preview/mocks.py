"""Run a Pulumi program under mocks and record what it registers.

This is the one mocks implementation of the package: the offline preview and the tests both use it. It records
every resource with its inputs (secrets redacted), parent, dependencies (explicit and implicit), and the
protect / retain-on-delete / deleted-with options, and answers only the data sources the program uses.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import pulumi
from pulumi.output import Unknown
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from components import aws_names
from components.identity.documents import dns_suffix, same_principal
from components.preview.account import ExistingAccount, UnknownToAccount

REDACTED = "[secret]"
#: How a value that is only known after a real deployment is shown (as `pulumi preview` shows `output<string>`).
UNKNOWN = "[unknown]"
ACCOUNT_ID = "123456789012"
_STACK_TYPE = "pulumi:pulumi:Stack"


class UnexpectedCall(Exception):
    """The program called a data source the mocks do not answer: add it here deliberately, or don't call it."""


class RefusedByAws(Exception):
    """What AWS would refuse at create time although no provider checks it beforehand."""


#: Who runs the preview unless a test says otherwise: an IAM user that appears in no stack file.
DEFAULT_CALLER = f"arn:aws:iam::{ACCOUNT_ID}:user/preview"


@dataclass(frozen=True)
class Recorded:
    """One registered resource, as the engine would have received it."""

    urn: str
    type: str
    name: str
    parent: str | None
    inputs: dict[str, Any]
    dependencies: tuple[str, ...]
    protect: bool
    retain_on_delete: bool
    deleted_with: str | None
    id: str | None = None
    outputs: dict[str, Any] = field(default_factory=dict, compare=False)
    #: The aliases the program gave this resource, as sent to the engine: `{"urn": ...}` or an alias spec
    #: (`name`, `type`, `parentUrn`, `noParent`; empty fields default to the resource's own).
    aliases: tuple[dict[str, Any], ...] = ()
    #: How long the engine waits for a delete (Pulumi's default when None).
    delete_timeout: str | None = None
    #: The URN of the explicit provider the resource uses; the engine deletes a resource before its provider.
    provider: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "inputs": self.inputs,
            "dependencies": list(self.dependencies),
            "protect": self.protect,
            "retain_on_delete": self.retain_on_delete,
            "deleted_with": self.deleted_with,
        }


class Inventory:
    """What a program registered, with lookups for assertions."""

    def __init__(self, resources: Iterable[Recorded], stack_outputs: Mapping[str, Any]):
        self.resources = tuple(sorted(resources, key=lambda r: r.urn))
        self.stack_outputs = dict(stack_outputs)
        self._by_urn = {r.urn: r for r in self.resources}

    def of_type(self, type_: str) -> list[Recorded]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str, name: str | None = None) -> Recorded:
        """The single resource of a type (and name, when given); fails if there are none or several."""
        found = [r for r in self.of_type(type_) if name is None or r.name == name]
        if len(found) != 1:
            names = sorted(r.name for r in self.of_type(type_))
            raise AssertionError(f"expected one {type_} named {name!r}, found {len(found)} among {names}")
        return found[0]

    def by_urn(self, urn: str) -> Recorded:
        return self._by_urn[urn]

    def depends_on(self, resource: Recorded, other: Recorded) -> bool:
        """Whether `resource` waits for `other` (and so is deleted before it), directly or through what it depends
        on, its provider included: the engine deletes a resource before its provider."""
        seen: set[str] = set()
        todo = [*resource.dependencies, *([resource.provider] if resource.provider else [])]
        while todo:
            urn = todo.pop()
            if urn == other.urn:
                return True
            if urn in seen or urn not in self._by_urn:
                continue
            seen.add(urn)
            found = self._by_urn[urn]
            todo.extend(found.dependencies)
            if found.provider:
                todo.append(found.provider)
        return False

    def children(self, parent: Recorded) -> list[Recorded]:
        return [r for r in self.resources if r.parent == parent.urn]

    def alias_urns(self, resource: Recorded) -> frozenset[str]:
        """Every earlier URN the engine matches this resource against: its own aliases, and those it inherits from
        its parent's (the engine's rule, as in every SDK's `inheritedChildAlias`: a child whose name starts with its
        parent's name gets the parent's alias name in place of that prefix)."""
        stack_prefix = resource.urn.split("::", 2)[:2]
        own: set[str] = set()
        for alias in resource.aliases:
            if alias.get("urn"):
                own.add(alias["urn"])
                continue
            parent = None if alias.get("noParent") else alias.get("parentUrn") or resource.parent
            own.add(_urn(stack_prefix, parent, alias.get("type") or resource.type, alias.get("name") or resource.name))
        if resource.parent is not None and resource.parent in self._by_urn:
            parent = self._by_urn[resource.parent]
            for parent_alias in self.alias_urns(parent):
                name = resource.name
                if name.startswith(parent.name):
                    name = parent_alias.rsplit("::", 1)[1] + name[len(parent.name) :]
                own.add(_urn(stack_prefix, parent_alias, resource.type, name))
        return frozenset(own)


def _urn(stack_prefix: list[str], parent: str | None, type_: str, name: str) -> str:
    """A URN as the engine builds it: the parent's type chain, then this type, then the name."""
    if parent is None:
        return f"{stack_prefix[0]}::{stack_prefix[1]}::{type_}::{name}"
    return f"{parent.rsplit('::', 1)[0]}${type_}::{name}"


def _redact(value: Any, secret: bool = False) -> Any:
    """Secret values become REDACTED; a secret map or list keeps its shape, so manifests stay valid objects."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return _redact(value["value"], secret=True)
        return {k: _redact(v, secret) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, secret) for v in value]
    return REDACTED if secret else value


def _unwrap_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return _unwrap_secrets(value["value"])
        return {k: _unwrap_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap_secrets(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    """Inputs as JSON-able data (resource references become their URNs)."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_resource_sig:
            return {"resource": value.get("urn")}
        return {str(k): _plain(v) for k, v in value.items() if not str(k).startswith("__")}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, pulumi.Resource):
        return {"resource": "<resource>"}
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Unknown) or value is rpc.UNKNOWN:
        return UNKNOWN
    return value


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
        self.partition = "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"
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

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict]:
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
        return resource_id, {**state, **extra}

    def _arn(self, type_: str, name: str, resource_id: str) -> str:
        service = type_.split(":")[1].split("/")[0]
        kind = type_.rsplit(":", 1)[-1].lower()
        if service == "iam":
            return f"arn:{self.partition}:iam::{ACCOUNT_ID}:{kind}/{name}"
        return f"arn:{self.partition}:{service}:{self.region}:{ACCOUNT_ID}:{kind}/{resource_id}"

    def _outputs(self, type_: str, name: str, inputs: dict, resource_id: str) -> dict[str, Any]:
        if type_ == "eks:index:Cluster":
            cluster_name = inputs.get("name", name)
            issuer = f"oidc.eks.{self.region}.amazonaws.com/id/{_short_hex(cluster_name, length=32).upper()}"
            endpoint = f"https://{_short_hex(cluster_name, length=32).upper()}.gr7.{self.region}.eks.amazonaws.com"
            kubeconfig = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": "Q0E="}}],
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
            return {"keyId": resource_id, "arn": f"arn:{self.partition}:kms:{self.region}:{ACCOUNT_ID}:key/{resource_id}"}
        if type_ == "aws:ec2/launchTemplate:LaunchTemplate":
            return {"latestVersion": 1, "defaultVersion": 1}
        if type_ == "aws:s3/bucket:Bucket":
            bucket = aws_names.checked_name(type_, name, inputs)
            return {"arn": f"arn:{self.partition}:s3:::{bucket}"}
        if type_ == "aws:fsx/lustreFileSystem:LustreFileSystem":
            return {"dnsName": f"{resource_id}.fsx.{self.region}.amazonaws.com", "mountName": _short_hex(name, length=8)}
        if type_ == "random:index/randomPassword:RandomPassword":
            # bcrypt's shape ($2a$, cost, 53 characters of salt and hash), as pulumi-random's bcryptHash output
            return {"result": "preview-" + _short_hex(name, length=24), "bcryptHash": "$2a$10$" + _short_hex(name, "bcrypt", length=53)}
        if type_ == "aws:ec2/vpc:Vpc":
            return {"defaultSecurityGroupId": "sg-" + _short_hex(name, "default")}
        return {}

    def eks_inner_cluster(self, *, urn: str, component_name: str, inputs: dict) -> tuple[str, dict, dict]:
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

    def call(self, args: pulumi_mocks.MockCallArgs) -> dict:
        if args.token == "aws:index/getPartition:getPartition":
            return {"id": self.partition, "partition": self.partition, "dnsSuffix": dns_suffix(self.partition)}
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {"accountId": ACCOUNT_ID, "arn": self.caller_arn, "id": ACCOUNT_ID, "userId": "AIDAPREVIEW"}
        if args.token == "aws:iam/getSessionContext:getSessionContext":
            arn = args.args["arn"]
            issuer = self.issuer_arn(arn)
            return {"arn": arn, "issuerArn": issuer, "issuerName": issuer.rsplit("/", 1)[-1], "id": arn}
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


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A mock monitor that keeps what the engine would be told about each resource."""

    def __init__(self, mocks: pulumi_mocks.Mocks):
        super().__init__(mocks)
        self.recorded: dict[str, Recorded] = {}
        self.stack_urn: str | None = None

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # Like the engine: a URN carries the whole chain of its parents' types (pulumi's MockMonitor keeps only the
        # direct parent's), and resources directly under the stack do not carry the stack's type.
        if parent and parent != self.stack_urn:
            type_ = f"{parent.split('::')[2]}${type_}"
        return f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::{type_}::{name}"

    def _with_inner_cluster(self, request, response, dependencies: tuple[str, ...]):
        """Record pulumi-eks's inner aws.eks.Cluster and hand it back as the component's `eksCluster` output.

        The reference is what the engine sends for a remote component's resource output; the registration lets the
        SDK resolve it (getResource), so `cluster.eks_cluster.name` behaves as in a real deployment.
        """
        name = f"{request.name}-eksCluster"
        urn = self.make_urn(response.urn, "aws:eks/cluster:Cluster", name)
        inputs = _unwrap_secrets(rpc.deserialize_properties(request.object))
        creator = self.mocks.creator_of(inputs.get("name", request.name))
        for key, entry in sorted((inputs.get("accessEntries") or {}).items()):
            if creator and same_principal(entry.get("principalArn", ""), creator):
                raise RefusedByAws(
                    f"access entry {key!r} of {request.name}: ResourceInUseException: the cluster's creator {creator} "
                    "already has an access entry (pulumi-eks always bootstraps the creator's admin access)"
                )
        id_, cluster_inputs, outputs = self.mocks.eks_inner_cluster(urn=urn, component_name=request.name, inputs=inputs)
        self.resources[urn] = pulumi_mocks.MockMonitor.ResourceRegistration(urn, id_, outputs)
        self.recorded[urn] = Recorded(
            urn=urn,
            type="aws:eks/cluster:Cluster",
            name=name,
            parent=response.urn,
            inputs=_plain(cluster_inputs),
            dependencies=dependencies,
            protect=False,
            retain_on_delete=False,
            deleted_with=None,
            id=id_,
            outputs=outputs,
        )
        state = dict(self.resources[response.urn].state)
        state["eksCluster"] = {rpc._special_sig_key: rpc._special_resource_sig, "urn": urn, "id": id_}
        self.resources[response.urn] = pulumi_mocks.MockMonitor.ResourceRegistration(response.urn, response.id, state)
        obj_proto = _sync_await(rpc.serialize_properties(state, {}))
        return type(response)(urn=response.urn, id=response.id, object=obj_proto)

    def Call(self, request):  # noqa: N802 - the gRPC method name
        """A method of a component resource (e.g. pulumi-eks's Cluster.getKubeconfig), answered by the mocks' `call`
        with `__self__` given as the component's logical name (pulumi's MockMonitor has no Call at all)."""
        plain = type(request.args)()
        plain.CopyFrom(request.args)
        # Deserialising the reference would rebuild the resource on another event loop; its URN is enough.
        self_urn = plain.fields.pop("__self__").struct_value.fields["urn"].string_value
        args = rpc.deserialize_properties(plain)
        args["__self__"] = self_urn.rsplit("::", 1)[1]
        result = self.mocks.call(pulumi_mocks.MockCallArgs(token=request.tok, args=args, provider=request.provider))
        return provider_pb2.CallResponse(**{"return": _sync_await(rpc.serialize_properties(result, {}))})

    def RegisterResource(self, request):  # noqa: N802 - the gRPC method name
        response = super().RegisterResource(request)
        if request.type == _STACK_TYPE:
            self.stack_urn = response.urn
            return response
        inputs = rpc.deserialize_properties(request.object)
        dependencies = set(request.dependencies)
        for property_dependencies in request.propertyDependencies.values():
            dependencies.update(property_dependencies.urns)
        parent = request.parent or None
        if parent == self.stack_urn:
            parent = None
        if request.type == "eks:index:Cluster" and isinstance(self.mocks, PlatformMocks):
            response = self._with_inner_cluster(request, response, tuple(sorted(dependencies)))
        registration = self.resources.get(response.urn)
        aliases = tuple(_alias(alias) for alias in request.aliases) + tuple({"urn": urn} for urn in request.aliasURNs)
        self.recorded[response.urn] = Recorded(
            urn=response.urn,
            type=request.type,
            name=request.name,
            parent=parent,
            inputs=_plain(_redact(inputs)),
            dependencies=tuple(sorted(dependencies)),
            protect=bool(request.protect),
            retain_on_delete=bool(request.retainOnDelete),
            deleted_with=request.deletedWith or None,
            id=registration.id if registration else None,
            outputs=_unwrap_secrets(registration.state) if registration else {},
            aliases=aliases,
            delete_timeout=request.customTimeouts.delete or None,
            # A provider reference is `<urn>::<id>`.
            provider=request.provider.rsplit("::", 1)[0] if request.provider else None,
        )
        return response


def _alias(alias: Any) -> dict[str, Any]:
    """An alias as sent to the engine (a URN, or a spec whose empty fields default to the resource's own)."""
    if alias.WhichOneof("alias") == "urn":
        return {"urn": alias.urn}
    spec = alias.spec
    return {
        "name": spec.name,
        "type": spec.type,
        "parentUrn": spec.parentUrn if spec.WhichOneof("parent") == "parentUrn" else "",
        "noParent": spec.noParent if spec.WhichOneof("parent") == "noParent" else False,
    }


def run(
    program: Callable[[], None],
    *,
    project: str,
    stack: str,
    region: str,
    config: Mapping[str, str],
    secret_keys: Iterable[str] = (),
    caller_arn: str = DEFAULT_CALLER,
    existing_clusters: Mapping[str, Mapping[str, str]] | None = None,
    stack_references: Mapping[str, Mapping[str, Any]] | None = None,
) -> Inventory:
    """Run `program` under the platform mocks with the given raw stack config, and return what it registered.

    `caller_arn`, `existing_clusters` and `stack_references` describe the account and the stacks it runs against
    (see PlatformMocks)."""
    mocks = PlatformMocks(
        region, caller_arn=caller_arn, existing_clusters=existing_clusters, stack_references=stack_references
    )
    monitor = RecordingMonitor(mocks)
    # A fresh root stack for every run, so several programs can run in one process (the tests do).
    pulumi.runtime.settings.ROOT.set(None)
    pulumi.runtime.set_all_config(dict(config), list(secret_keys))
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=True, monitor=monitor)
    # Outputs still pending from an earlier run that failed must not be awaited (and re-raised) by this one.
    pulumi.runtime.settings.SETTINGS.outputs.clear()
    _sync_await(run_pulumi_func(program))
    return Inventory(monitor.recorded.values(), _stack_outputs())


def _stack_outputs() -> dict[str, Any]:
    """The values the program exported, with secrets redacted."""
    root = pulumi.runtime.get_root_resource()
    exported = getattr(root, "outputs", {}) or {}
    values: dict[str, Any] = {}
    for key, value in exported.items():
        output = pulumi.Output.from_input(value)
        if _sync_await(output.is_secret()):
            values[key] = REDACTED
        else:
            values[key] = _plain(_sync_await(output.future()))
    return values
