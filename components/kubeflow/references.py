"""The ConfigMaps and Secrets a workload's pods read: stable names in place of kustomize's hash-suffixed ones, and a
digest of their content on each pod template, so a change still rolls the workload (plain-dict changes, as in
transform.py: objects changed are copied first)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from .objects import Manifest, containers, key, pod_template
from .transform import edit

#: kustomize's generator suffix: 10 characters of its hash alphabet (hex with 0, 1, 3, a and e swapped out).
_HASH_SUFFIX = re.compile(r"^(?P<base>.+)-[245-9bcdfghkmt]{10}$")
#: A digest of the ConfigMaps and Secrets a pod template reads, so a change to them rolls the workload (what
#: kustomize's name suffixes did, which stable names give up).
CONFIG_DIGEST = "eksml.io/config-digest"


def _config_refs(pod_spec: dict[str, Any]) -> Iterable[tuple[str, dict[str, Any], str]]:
    """Every place a pod spec names a ConfigMap or Secret: (kind, the dict holding the name, its field)."""
    for volume in pod_spec.get("volumes") or ():
        if "configMap" in volume:
            yield "ConfigMap", volume["configMap"], "name"
        if "secret" in volume:
            yield "Secret", volume["secret"], "secretName"
        for source in (volume.get("projected") or {}).get("sources") or ():
            if "configMap" in source:
                yield "ConfigMap", source["configMap"], "name"
            if "secret" in source:
                yield "Secret", source["secret"], "name"
    for container in containers(pod_spec):
        for env in container.get("env") or ():
            value_from = env.get("valueFrom") or {}
            if "configMapKeyRef" in value_from:
                yield "ConfigMap", value_from["configMapKeyRef"], "name"
            if "secretKeyRef" in value_from:
                yield "Secret", value_from["secretKeyRef"], "name"
        for source in container.get("envFrom") or ():
            if "configMapRef" in source:
                yield "ConfigMap", source["configMapRef"], "name"
            if "secretRef" in source:
                yield "Secret", source["secretRef"], "name"
    for pull in pod_spec.get("imagePullSecrets") or ():
        yield "Secret", pull, "name"


def config_references(obj: Manifest) -> set[tuple[str, str]]:
    """(kind, name) of every ConfigMap and Secret a workload's pods read, in the workload's namespace."""
    template = pod_template(obj)
    if template is None:
        return set()
    return {(kind, holder[field]) for kind, holder, field in _config_refs(template.get("spec", {})) if field in holder}


def stable_names(objects: list[Manifest]) -> list[Manifest]:
    """Drop kustomize's hash suffix from generated ConfigMaps and Secrets and rename every pod-spec reference.

    A suffix changes whenever the data does, so Pulumi would replace the object (and every workload naming it)
    on each credential or config change. Raises ValueError if an old name is still mentioned anywhere else."""
    renames: dict[tuple[str, str, str], str] = {}
    taken = {(key(o).namespace, o["kind"], o["metadata"]["name"]) for o in objects}
    for obj in objects:
        if obj["kind"] not in {"ConfigMap", "Secret"} or obj["apiVersion"] != "v1":
            continue
        match = _HASH_SUFFIX.match(obj["metadata"]["name"])
        if match is None:
            continue
        namespace = obj["metadata"].get("namespace", "")
        new = match.group("base")
        if (namespace, obj["kind"], new) in taken:
            raise ValueError(f"{key(obj)}: its stable name {new!r} is taken by another {obj['kind']}")
        renames[(namespace, obj["kind"], obj["metadata"]["name"])] = new
    if not renames:
        return list(objects)

    def change(obj: Manifest) -> Manifest | None:
        namespace = obj["metadata"].get("namespace", "")
        changed = False
        if (namespace, obj["kind"], obj["metadata"]["name"]) in renames and obj["apiVersion"] == "v1":
            obj["metadata"]["name"] = renames[(namespace, obj["kind"], obj["metadata"]["name"])]
            changed = True
        template = pod_template(obj)
        if template is not None:
            for kind, holder, field in _config_refs(template.get("spec", {})):
                new = renames.get((namespace, kind, holder.get(field, "")))
                if new is not None:
                    holder[field] = new
                    changed = True
        return obj if changed else None

    result = edit(objects, change, lambda obj: obj["kind"] in {"ConfigMap", "Secret"} or pod_template(obj) is not None)
    text = json.dumps(result)
    left = sorted(old for (_, _, old) in renames if f'"{old}"' in text)
    if left:
        raise ValueError(f"hash-suffixed names still referenced outside pod specs: {', '.join(left)}")
    return result


def config_digests(objects: list[Manifest]) -> list[Manifest]:
    """Annotate each workload's pod template with a digest of the ConfigMaps and Secrets it reads (see
    CONFIG_DIGEST). Computed over the objects as given: secret values given as placeholders digest as the
    placeholder, so rotating a generated secret needs a rollout restart."""
    content = {
        (key(o).namespace, o["kind"], o["metadata"]["name"]): {
            f: o[f] for f in ("data", "stringData", "binaryData") if f in o
        }
        for o in objects
        if o["kind"] in {"ConfigMap", "Secret"} and o["apiVersion"] == "v1"
    }

    def change(obj: Manifest) -> Manifest | None:
        namespace = obj["metadata"].get("namespace", "")
        read = sorted((kind, name) for kind, name in config_references(obj) if (namespace, kind, name) in content)
        if not read:
            return None
        digest = hashlib.sha256(
            json.dumps([[kind, name, content[(namespace, kind, name)]] for kind, name in read], sort_keys=True).encode()
        ).hexdigest()
        metadata = pod_template(obj).setdefault("metadata", {})  # type: ignore[union-attr]
        metadata.setdefault("annotations", {})[CONFIG_DIGEST] = digest
        return obj

    return edit(objects, change, lambda obj: pod_template(obj) is not None)
