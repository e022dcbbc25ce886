"""Parsing a stack's config, once, at the edge.

`parse_config` takes the raw Pulumi config of a stack (every `namespace:key` with its string value, as Pulumi hands
it to the program) and returns a `PlatformConfig` or raises `ConfigError` listing every problem at once, each naming
its full key path and what was expected. The environment (`dev`, `prod`) fills in the keys the stack leaves out
(`environment_defaults`). Components never read config themselves; they take these models (or plainer values) as
arguments.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from pydantic.alias_generators import to_snake

from ..config.errors import ConfigError, ConfigIssue, issues_from
from ..config.types import Environment, NatGateways, StatefulResources
from .checks import region_problems
from .config import AWS_KEYS, CONTEXT_KEYS, PROJECT_NAMESPACE, PlatformConfig
from .secret_keys import named_secret_keys

#: Model fields the program fills from elsewhere: in the project's namespace they would be silently replaced.
_SUPPLIED = {
    **{key: f"the Pulumi {key}'s name is used" for key in CONTEXT_KEYS},
    **{key: f"it is aws:{key}" for key in AWS_KEYS},
}


def environment_defaults(environment: Environment, region: str, existing_vpc: bool = False) -> dict[str, Any]:
    """What an environment implies for every key the user leaves out (keys as they are written in stack config).

    An existing VPC brings its own NAT and AZs, so neither is implied for it.
    """
    if environment is Environment.DEV:
        defaults: dict[str, Any] = {
            "statefulResources": StatefulResources.DESTROY.value,
            "network": {"availabilityZones": [f"{region}a", f"{region}b"], "natGateways": NatGateways.SINGLE.value},
            "cluster": {"endpoint": {"public": True, "private": True}},
        }
    else:
        defaults = {
            "statefulResources": StatefulResources.PROTECT.value,
            "network": {
                "availabilityZones": [f"{region}a", f"{region}b", f"{region}c"],
                "natGateways": NatGateways.PER_AZ.value,
            },
            "cluster": {"endpoint": {"public": False, "private": True}},
        }
    if existing_vpc:  # its NAT and its AZs are whatever the existing subnets have: never guessed
        del defaults["network"]["natGateways"]
        del defaults["network"]["availabilityZones"]
    return defaults


def _fill_defaults(values: dict[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    filled = dict(values)
    for key, default in defaults.items():
        if key not in filled:
            filled[key] = default
        elif isinstance(default, Mapping) and isinstance(filled[key], dict):
            filled[key] = _fill_defaults(filled[key], default)
    return filled


def _decode(value: Any) -> Any:
    """Pulumi hands structured config to the program as JSON text; scalars stay strings."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def parse_config(raw: Mapping[str, Any], *, project: str, stack: str) -> PlatformConfig:
    """Turn a stack's raw config (`namespace:key` -> value) into a `PlatformConfig`, or raise `ConfigError`."""
    values, aws, issues = _by_namespace(raw)
    issues.extend(_set_secrets_aside(values))
    region = aws.get("region")
    if region is None or region == "":
        got = "" if region is None else ", got an empty value"
        issues.append(ConfigIssue(path="aws:region", message=f"is required (e.g. 'us-west-2'){got}"))
        region = ""  # the remaining keys are still checked
    environment = values.get("environment")
    known_environment = isinstance(environment, str) and environment in {e.value for e in Environment}
    if known_environment:
        network = values.get("network")
        existing_vpc = isinstance(network, dict) and "existing" in network
        values = _fill_defaults(values, environment_defaults(Environment(str(environment)), str(region), existing_vpc))

    document = {**values, "project": project, "stack": stack, "region": region}
    if "profile" in aws:
        document["profile"] = aws["profile"]
    # Checked here as well as on the model, so a wrong AZ is reported even when other keys fail to validate.
    network = values.get("network")
    zones = network.get("availabilityZones") if isinstance(network, dict) else None
    issues.extend(ConfigIssue(path=path, message=message) for path, message in region_problems(region, zones))
    try:
        config = PlatformConfig.model_validate(document)
    except ValidationError as exc:
        found = issues_from(exc, PlatformConfig)
        if not known_environment:  # what an environment fills in is not missing: the environment is the problem
            implied = _environment_keys(str(region))
            found = [i for i in found if not (i.path in implied and i.message.startswith("is required"))]
        issues.extend(found)
        raise ConfigError(issues) from None
    if issues:
        raise ConfigError(issues)
    return config


def _by_namespace(raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], list[ConfigIssue]]:
    """The project's keys and the `aws:` keys the program reads, decoded, and a problem for every other key (the
    `pulumi:` namespace is Pulumi's own)."""
    issues: list[ConfigIssue] = []
    values: dict[str, Any] = {}
    aws: dict[str, Any] = {}
    for full_key in sorted(raw):
        namespace, _, key = full_key.partition(":")
        value = _decode(raw[full_key])
        if namespace == PROJECT_NAMESPACE and key in _SUPPLIED:
            issues.append(ConfigIssue(path=full_key, message=f"is not a setting: {_SUPPLIED[key]}; remove it"))
        elif namespace == PROJECT_NAMESPACE:
            values[key] = value
        elif namespace == "aws" and key in AWS_KEYS:
            aws[key] = value
        elif namespace == "aws":
            issues.append(
                ConfigIssue(
                    path=full_key,
                    message="is not read: the program's AWS provider takes only "
                    f"{', '.join('aws:' + k for k in AWS_KEYS)}; set other provider options through AWS_* "
                    "environment variables",
                )
            )
        elif namespace != "pulumi":
            issues.append(
                ConfigIssue(path=full_key, message=f"is not read by this program (its keys are {PROJECT_NAMESPACE}:*)")
            )
    return values, aws, issues


def _set_secrets_aside(values: dict[str, Any]) -> list[ConfigIssue]:
    """Take the keys the config names as secrets out of `values` (the program reads them as secrets, never into the
    models); a problem for each that names a setting of the platform instead."""
    issues = []
    for key, path in sorted(named_secret_keys(values).items()):
        if key in PlatformConfig.model_fields or to_snake(key) in PlatformConfig.model_fields:
            issues.append(ConfigIssue(path=path, message=f"names {key!r}, a setting of the platform, not a secret"))
        else:
            values.pop(key, None)
    return issues


def _environment_keys(region: str) -> set[str]:
    """The dotted keys some environment fills in when the stack leaves them out."""

    def paths(values: dict[str, Any], prefix: str = "") -> set[str]:
        found = set()
        for key, value in values.items():
            found.add(prefix + key)
            if isinstance(value, dict):
                found |= paths(value, f"{prefix}{key}.")
        return found

    return set().union(*(paths(environment_defaults(e, region)) for e in Environment))
