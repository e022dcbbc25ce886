"""The central dashboard shows only what is installed: links into the cluster whose path no installed app serves
are dropped from its links ConfigMap (pure).

Upstream's dashboard overlay lists Katib, KServe's models web app and the Model Registry whatever is installed
(applications/dashboard/overlays/istio/patches/configmap.yaml, `links`: menuLinks, quickLinks). A path is served
when an installed VirtualService routes a prefix of it; the dashboard's own catch-all route (`/`) does not count.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .objects import Manifest

LINKS_CONFIG_MAP = "dashboard-config"
LINKS_KEY = "links"
#: The link lists of the links JSON that point into the cluster (the documentation items point to kubeflow.org).
IN_CLUSTER_LISTS = ("menuLinks", "quickLinks")


def served_prefixes(objects: Iterable[Manifest]) -> frozenset[str]:
    """The URI prefixes the installed VirtualServices route, the catch-all `/` left out."""
    prefixes = set()
    for obj in objects:
        if obj.get("kind") != "VirtualService":
            continue
        for route in (obj.get("spec") or {}).get("http") or ():
            for match in route.get("match") or ():
                prefix = (match.get("uri") or {}).get("prefix")
                if prefix and prefix != "/":
                    prefixes.add(prefix)
    return frozenset(prefixes)


def _served(link: str, prefixes: frozenset[str]) -> bool:
    return not link.startswith("/") or any(link.startswith(p) for p in prefixes)


def _kept(items: Sequence[Mapping[str, Any]], prefixes: frozenset[str]) -> list[dict[str, Any]]:
    kept = []
    for item in items:
        item = dict(item)
        if "items" in item:  # a section: kept while one of its links is
            item["items"] = _kept(item["items"], prefixes)
            if item["items"]:
                kept.append(item)
        elif _served(str(item.get("link", "")), prefixes):
            kept.append(item)
    return kept


def installed_links(objects: Sequence[Manifest]) -> list[Manifest]:
    """The objects with the dashboard's links narrowed to what the installed apps serve."""
    prefixes = served_prefixes(objects)
    changed: list[Manifest] = []
    for obj in objects:
        if (
            obj.get("kind") == "ConfigMap"
            and obj["metadata"]["name"] == LINKS_CONFIG_MAP
            and LINKS_KEY in (obj.get("data") or {})
        ):
            links = json.loads(obj["data"][LINKS_KEY])
            for key in IN_CLUSTER_LISTS:
                if key in links:
                    links[key] = _kept(links[key], prefixes)
            obj = copy.deepcopy(dict(obj))
            obj["data"][LINKS_KEY] = json.dumps(links, indent=4)
        changed.append(obj)
    return changed
