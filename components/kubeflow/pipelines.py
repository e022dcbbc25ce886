"""Kubeflow Pipelines' artifacts on the platform's S3 bucket, read and written with IRSA (`kubeflow.pipelines.artifacts:
s3`): what changes in the rendered objects and what each team namespace gets (the platform's two Pipelines roles'
IAM documents are in pipelines_iam.py, the store and the layout of its keys in pipelines_store.py).

Where each key comes from (the pinned tree, community-distribution/applications/pipeline/upstream/):

- the API server's object store: `OBJECTSTORECONFIG_*` env of `ml-pipeline` (base/pipeline/
  ml-pipeline-apiserver-deployment.yaml); `OBJECTSTORECONFIG_REGION` and `OBJECTSTORECONFIG_PIPELINEPATH` are the
  env forms of the server's `ObjectStoreConfig.Region` / `.PipelinePath` settings (KFP 2.16 backend, client_manager.go);
  IRSA needs the static keys gone ("Object Store Configuration", kubeflow.org: they take precedence over IRSA);
- its bucket: `bucketName` of the `pipeline-install-config` ConfigMap, which the server reads as
  `OBJECTSTORECONFIG_BUCKETNAME` (base/installs/generic/pipeline-install-config.yaml);
- the launcher's: the `kfp-launcher` ConfigMap in the run's namespace, `defaultPipelineRoot` and `providers`
  (`s3.default`: endpoint, region, disableSSL, forcePathStyle, credentials.fromEnv; kubeflow.org "Object Store
  Configuration", KFP Launcher section), written upstream per namespace by the profile controller's sync hook
  (base/installs/multi-user/pipelines-profile-controller/sync.py) with `clusterDomain`, beside
  `metadata-grpc-configmap` and Argo's `artifact-repositories` (annotation
  `workflows.argoproj.io/default-artifact-repository`);
- the static keys: the `mlpipeline-minio-artifact` Secret (third-party/seaweedfs/base/seaweedfs/), read by the API
  server, the UI (`MINIO_ACCESS_KEY`/`MINIO_SECRET_KEY`, base/pipeline/ml-pipeline-ui-deployment.yaml), the profile
  controller and Argo's default repository (third-party/argo/base/workflow-controller-configmap-patch.yaml).

What each reader does with that config, read in kubeflow/pipelines at the tag of the release the tree deploys
(`versions.KUBEFLOW_PIPELINES`: 2.16.1, commit 67a73cf809f7c76fee33c749f302f2bceedd8fab):

- the API server (backend/src/apiserver/client_manager/client_manager.go, `buildConfigFromEnvVars`,
  `loadAWSConfig`): reads `ObjectStoreConfig.{BucketName,Host,Port,Secure,Region,AccessKey,SecretAccessKey}` through
  viper (env `OBJECTSTORECONFIG_*`, main.go `initConfig`); with both keys empty it loads the AWS SDK v2 default chain,
  which takes the IRSA web identity; the region defaults to us-east-1 when unset;
- the launcher and driver in a team namespace (backend/src/v2/config/s3.go, backend/src/v2/objectstore/
  object_store.go `OpenBucket`): with `credentials.fromEnv: true` they open `s3://<bucket>?prefix=<root>` with
  the SDK's default chain, so the pod's IRSA variables (and the `AWS_REGION` EKS's pod identity webhook sets beside
  them) are what count; `endpoint`/`region` are recorded in the artifact's `store_session_info` only;
- the UI (frontend/server/configs.ts, minio-helper.ts `createMinioClient`, aws-helper.ts `isAWSS3Endpoint`,
  handlers/artifacts.ts): an `s3://` artifact is read with `AWS_S3_ENDPOINT` (default s3.amazonaws.com),
  `AWS_REGION` (default us-east-1) and `AWS_SSL`; when `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` are unset, the
  artifact's session info says `fromEnv`, and the endpoint matches `s3.*.amazonaws.com`, it takes credentials from
  the SDK's node provider chain (`fromNodeProviderChain`, web identity included): IRSA works for the UI at this
  version. Its Argo log-archive fallback (`ARGO_ARCHIVE_*`, handlers/pod-logs.ts, workflow-helper.ts) cannot find a
  team's logs: one `ARGO_KEYFORMAT` for every namespace, or a per-namespace lookup that reads a data key
  (`artifact-repositories`) neither upstream's nor this ConfigMap carries, through a ConfigMap read the UI's
  ClusterRole does not grant; so it is off, and a finished step's logs come from the `executor-logs` artifact the
  launcher publishes (`PUBLISH_LOGS`, on in the pinned API server), read through the same S3 path. Its per-namespace
  artifact proxy (`ARTIFACTS_PROXY_ENABLED`) is served by the profile controller's `ml-pipeline-ui-artifact`, which
  S3 mode leaves out, so it must stay off.

That sync hook can only serve SeaweedFS (it makes each namespace's keys through SeaweedFS's IAM API and writes
`minio://` roots), so in S3 mode the profile controller is left out and the platform writes those three ConfigMaps
into each of its teams' namespaces itself. Values known only at deploy time (the bucket's name, the roles' ARNs) are
placeholders here, each a whole string, filled by `values` at registration.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import yaml

from .objects import Manifest, containers, pod_template
from .pipelines_store import SERVER_PREFIX, S3Store, log_key_format

NAMESPACE = "kubeflow"
#: The service accounts of the API server and the UI (base/pipeline/ml-pipeline-{apiserver,ui}-sa.yaml).
SERVER_ACCOUNT = "ml-pipeline"
UI_ACCOUNT = "ml-pipeline-ui"
IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"
ARGO_REPOSITORY_ANNOTATION = "workflows.argoproj.io/default-artifact-repository"
ARGO_REPOSITORY_KEY = "default-namespaced"
METADATA_GRPC = {"METADATA_GRPC_SERVICE_HOST": "metadata-grpc-service.kubeflow", "METADATA_GRPC_SERVICE_PORT": "8080"}
CLUSTER_DOMAIN = ".svc.cluster.local"

BUCKET_PLACEHOLDER = "<<kubeflow-input:pipelines-bucket>>"
SERVER_ROLE_PLACEHOLDER = "<<kubeflow-input:pipelines-server-role-arn>>"
UI_ROLE_PLACEHOLDER = "<<kubeflow-input:pipelines-ui-role-arn>>"
DEFAULT_REPOSITORY_PLACEHOLDER = "<<kubeflow-input:pipelines-default-repository>>"


def root_placeholder(team: str) -> str:
    return f"<<kubeflow-input:pipelines-root:{team}>>"


def repository_placeholder(team: str) -> str:
    return f"<<kubeflow-input:pipelines-repository:{team}>>"


#: What S3 mode leaves out: SeaweedFS (third-party/seaweedfs/) with its static keys, and the pipelines profile
#: controller (base/installs/multi-user/pipelines-profile-controller/), by (kind, namespace, name).
LEFT_OUT = frozenset(
    {
        ("Deployment", NAMESPACE, "seaweedfs"),
        ("Service", NAMESPACE, "seaweedfs"),
        ("ServiceAccount", NAMESPACE, "seaweedfs"),
        ("PersistentVolumeClaim", NAMESPACE, "seaweedfs-pvc"),
        ("NetworkPolicy", NAMESPACE, "seaweedfs"),
        ("AuthorizationPolicy", NAMESPACE, "seaweedfs-service"),
        ("DestinationRule", NAMESPACE, "ml-pipeline-seaweedfs"),
        ("Secret", NAMESPACE, "mlpipeline-minio-artifact"),
        ("Deployment", NAMESPACE, "kubeflow-pipelines-profile-controller"),
        ("Service", NAMESPACE, "kubeflow-pipelines-profile-controller"),
        ("DecoratorController", "", "kubeflow-pipelines-profile-controller"),  # cluster-scoped
        ("ConfigMap", NAMESPACE, "kubeflow-pipelines-profile-controller-code"),
        ("ConfigMap", NAMESPACE, "kubeflow-pipelines-profile-controller-env"),
        # Metacontroller runs only the profile controller's DecoratorController: nothing else in the pinned tree
        # makes a DecoratorController or CompositeController (third-party/metacontroller/base is its install).
        ("StatefulSet", NAMESPACE, "metacontroller"),
        ("ServiceAccount", NAMESPACE, "meta-controller-service"),
        ("ClusterRole", "", "kubeflow-metacontroller"),
        ("ClusterRoleBinding", "", "meta-controller-cluster-role-binding"),
        ("CustomResourceDefinition", "", "compositecontrollers.metacontroller.k8s.io"),
        ("CustomResourceDefinition", "", "controllerrevisions.metacontroller.k8s.io"),
        ("CustomResourceDefinition", "", "decoratorcontrollers.metacontroller.k8s.io"),
    }
)
#: Metacontroller's API group: with it left out, no object of this group may remain.
METACONTROLLER_GROUP = "metacontroller.k8s.io"
#: The generated credentials S3 mode has no use for (SeaweedFS's S3 identity): not created in S3 mode.
UNUSED_CREDENTIALS = frozenset({"pipelines_s3_access_key", "pipelines_s3_secret_key"})
#: Env naming static keys, removed from the API server and the UI: each reader prefers them to the IRSA web identity
#: (client_manager.go `loadAWSConfig`; minio-helper.ts `createMinioClient` uses the provider chain only when the UI's
#: `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` are not both set).
STATIC_KEY_ENV = frozenset(
    {
        "OBJECTSTORECONFIG_ACCESSKEY",
        "OBJECTSTORECONFIG_SECRETACCESSKEY",
        "MINIO_ACCESS_KEY",
        "MINIO_SECRET_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
    }
)


def launcher_providers(store: S3Store) -> str:
    """The `providers` value of a team's `kfp-launcher`: S3 at the regional endpoint over TLS, credentials from the
    pod's environment (the IRSA web identity the EKS webhook injects for `default-editor`)."""
    provider = {
        "s3": {
            "default": {
                "endpoint": store.endpoint,
                "region": store.region,
                "disableSSL": False,
                "forcePathStyle": False,
                "credentials": {"fromEnv": True},
            }
        }
    }
    return yaml.safe_dump(provider, sort_keys=True)


def _argo_repository(store: S3Store, bucket: str, key_format: str, *, archive_logs: bool) -> str:
    return json.dumps(
        {
            "archiveLogs": archive_logs,
            "s3": {
                "endpoint": store.endpoint,
                "bucket": bucket,
                "region": store.region,
                "insecure": False,
                "useSDKCreds": True,  # Argo's IRSA path: the SDK's credential chain, no key Secret
                "keyFormat": key_format,
            },
        },
        sort_keys=True,
    )


def values(store: S3Store, bucket: str) -> dict[str, str]:
    """Every placeholder but the roles' ARNs, given the bucket's name."""
    found = {
        BUCKET_PLACEHOLDER: bucket,
        # Namespaces the platform does not write a repository for archive nothing: no team role may write there.
        DEFAULT_REPOSITORY_PLACEHOLDER: _argo_repository(
            store, bucket, f"{SERVER_PREFIX}/argo/{{{{workflow.namespace}}}}/{{{{workflow.name}}}}", archive_logs=False
        ),
    }
    for team in store.team_prefixes:
        root = store.team_root(team)
        found[root_placeholder(team)] = f"s3://{bucket}/{root}"
        found[repository_placeholder(team)] = _argo_repository(
            store,
            bucket,
            log_key_format(root),
            archive_logs=True,
        )
    return found


def _ident(obj: Manifest) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def left_out(obj: Manifest) -> bool:
    """An object S3 mode does not install."""
    return _ident(obj) in LEFT_OUT


def server_env(store: S3Store) -> dict[str, str]:
    """What the API server is given to reach S3 with IRSA (besides the bucket, read from `pipeline-install-config`)."""
    return {
        "OBJECTSTORECONFIG_HOST": store.endpoint,
        "OBJECTSTORECONFIG_PORT": "443",
        "OBJECTSTORECONFIG_SECURE": "true",
        "OBJECTSTORECONFIG_REGION": store.region,  # unset, the server signs for us-east-1
        "OBJECTSTORECONFIG_PIPELINEPATH": SERVER_PREFIX,
    }


def ui_env(store: S3Store) -> dict[str, str]:
    """What the UI is given to read `s3://` artifacts with IRSA: the regional endpoint (which `isAWSS3Endpoint`
    accepts) and region (its default, us-east-1, would sign for the wrong region), TLS; and the Argo log-archive
    fallback off (it cannot address a team's prefix, see the module's notes)."""
    return {
        "AWS_S3_ENDPOINT": store.endpoint,
        "AWS_REGION": store.region,
        "AWS_SSL": "true",
        "ARGO_ARCHIVE_LOGS": "false",
    }


def _set_env(container: dict[str, Any], name: str, value: str) -> None:
    env = [e for e in container.get("env") or () if e["name"] != name]
    env.append({"name": name, "value": value})
    container["env"] = env


def apply(objects: Iterable[Manifest], store: S3Store) -> list[Manifest]:
    """The rendered objects with Pipelines on S3: SeaweedFS and the profile controller left out, the API server and
    the UI without static keys and with their IRSA roles, the bucket in `pipeline-install-config`, Argo's default
    repository on S3. Raises ValueError when an object this expects is missing or a left-out one is still named."""
    objects = [o for o in objects if _ident(o) not in LEFT_OUT]
    expected = {
        ("Deployment", NAMESPACE, "ml-pipeline"),
        ("Deployment", NAMESPACE, "ml-pipeline-ui"),
        ("ServiceAccount", NAMESPACE, SERVER_ACCOUNT),
        ("ServiceAccount", NAMESPACE, UI_ACCOUNT),
        ("ConfigMap", NAMESPACE, "pipeline-install-config"),
        ("ConfigMap", NAMESPACE, "workflow-controller-configmap"),
    }
    missing = expected - {_ident(o) for o in objects}
    if missing:
        raise ValueError(f"Pipelines on S3: objects not found: {sorted(missing)}")
    result = []
    for obj in objects:
        ident = _ident(obj)
        if ident in expected:
            obj = json.loads(json.dumps(obj))  # a copy: the render's output is never changed in place
            _change(obj, store)
        result.append(obj)
    text = json.dumps(result)
    left = sorted(name for (_, _, name) in LEFT_OUT if f'"{name}"' in text)
    if left:
        raise ValueError(f"Pipelines on S3: left-out objects are still named: {', '.join(left)}")
    users = sorted(
        f"{o['kind']} {o['metadata']['name']}" for o in result if o["apiVersion"].startswith(METACONTROLLER_GROUP)
    )
    if users:
        raise ValueError(f"Pipelines on S3 leaves Metacontroller out, but these need it: {', '.join(users)}")
    return result


def _change(obj: Manifest, store: S3Store) -> None:
    kind, name = obj["kind"], obj["metadata"]["name"]
    if kind == "ServiceAccount":
        role = SERVER_ROLE_PLACEHOLDER if name == SERVER_ACCOUNT else UI_ROLE_PLACEHOLDER
        obj["metadata"].setdefault("annotations", {})[IRSA_ANNOTATION] = role
    elif kind == "ConfigMap" and name == "pipeline-install-config":
        proxy = obj["data"].get("ARTIFACTS_PROXY_ENABLED", "false")
        if proxy.lower() != "false":
            # The UI would send artifact reads to `ml-pipeline-ui-artifact` in each namespace, which only the
            # profile controller (left out here) makes.
            raise ValueError(
                f"Pipelines on S3: pipeline-install-config sets ARTIFACTS_PROXY_ENABLED={proxy!r}, but the "
                "per-namespace artifact proxy it routes to is not installed in S3 mode"
            )
        obj["data"]["bucketName"] = BUCKET_PLACEHOLDER
    elif kind == "ConfigMap":
        obj["data"]["artifactRepository"] = DEFAULT_REPOSITORY_PLACEHOLDER
    else:
        template = pod_template(obj)
        assert template is not None
        env = server_env(store) if name == "ml-pipeline" else ui_env(store)
        own = 0
        for container in containers(template["spec"]):
            container["env"] = [e for e in container.get("env") or () if e["name"] not in STATIC_KEY_ENV]
            if container["name"].startswith(name):  # the server's and the UI's own container, not a sidecar
                own += 1
                for key, value in env.items():
                    _set_env(container, key, value)
        if own != 1:
            raise ValueError(f"Pipelines on S3: Deployment {name} has {own} containers named {name}*, expected one")


def team_manifests(team: str, store: S3Store) -> list[Manifest]:
    """What the profile controller's sync hook would give a team namespace, for S3: `kfp-launcher` (the team's
    pipeline root, S3 with IRSA), `metadata-grpc-configmap`, and Argo's `artifact-repositories` (logs under the
    team's root)."""

    def config_map(name: str, data: dict[str, str], annotations: dict[str, str] | None = None) -> Manifest:
        metadata: dict[str, Any] = {"name": name, "namespace": team}
        if annotations:
            metadata["annotations"] = annotations
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}

    return [
        config_map(
            "kfp-launcher",
            {
                "defaultPipelineRoot": root_placeholder(team),
                "providers": launcher_providers(store),
                "clusterDomain": CLUSTER_DOMAIN,
            },
        ),
        config_map("metadata-grpc-configmap", dict(METADATA_GRPC)),
        config_map(
            "artifact-repositories",
            {ARGO_REPOSITORY_KEY: repository_placeholder(team)},
            {ARGO_REPOSITORY_ANNOTATION: ARGO_REPOSITORY_KEY},
        ),
    ]


def filled_team_manifests(team: str, store: S3Store, bucket: str) -> list[Manifest]:
    """`team_manifests` with the bucket's name known (a team stack reads it from the platform's outputs): every
    placeholder filled by `values`, as registration fills the platform's teams'."""
    found = values(store, bucket)
    objects = []
    for obj in team_manifests(team, store):
        data = {key: found.get(value, value) for key, value in obj["data"].items()}
        objects.append({**obj, "data": data})
    left = sorted(value for obj in objects for value in obj["data"].values() if value.startswith("<<kubeflow-input:"))
    assert not left, f"placeholders left in {team}'s Pipelines config: {left}"
    return objects
