"""A fake `random` provider plugin: `random:index/randomPassword:RandomPassword` with a real random password.

    python -m engine.providers.random <engine-address> [flags]

The id and the shape of the outputs are the mocks' (`PlatformMocks.new_resource`); `result` is a real password
drawn with `secrets` as terraform-provider-random draws it (the minimum of each class first, the rest from every
enabled class, then shuffled), and `bcryptHash` a real bcrypt hash when the `bcrypt` package is installed, else a
string of bcrypt's shape. Both are secret outputs. In preview both are unknown, as pulumi-random's are.

Check refuses what pulumi-random's schema refuses (pulumi_random/random_password.py, from the provider's schema):
a length under 1 or under the sum of the `min*` counts, a negative `min*` count, and `upper`, `lower`, `numeric`
(or the deprecated `number`) and `special` all set and all false. Every input of a RandomPassword forces a new one
(terraform-provider-random: RequiresReplace on every attribute), so Diff replaces on any change; with the inputs
unchanged there is no diff, and the state keeps its password.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Mapping
from typing import Any

import grpc
from google.protobuf import empty_pb2
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.proto import provider_pb2

from components.tools.preview.answers import PlatformMocks
from engine.providers.common import (
    UNKNOWN,
    FakeProvider,
    Refused,
    changes,
    contains_unknown,
    diff_response,
    handled,
    is_unknown,
    logical_name,
    masked,
    merged_outputs,
    plain,
    references_as_ids,
    region_from,
    secret,
    serve,
    to_dict,
    to_struct,
    type_token,
)

try:  # a real hash when the environment has bcrypt; the project does not depend on it
    import bcrypt
except ImportError:  # pragma: no cover - depends on the environment
    bcrypt = None

RANDOM_PASSWORD = "random:index/randomPassword:RandomPassword"
#: terraform-provider-random's special characters when `overrideSpecial` is not set.
DEFAULT_SPECIAL = "!@#$%&*()-_=+[]{}<>:?"
_MINIMUMS = ("minUpper", "minLower", "minNumeric", "minSpecial")
#: bcrypt's base64 alphabet.
_BCRYPT_ALPHABET = "./" + string.ascii_uppercase + string.ascii_lowercase + string.digits
#: The region the mocks are made with when the environment names none: a password has no region, and the random
#: provider is not told the stack's; it shows only in the `arn` the mocks give every resource, which nothing reads
#: for a password (the offline preview's carries the stack's region there).
_NO_REGION = "us-east-1"


def password_failures(inputs: Mapping[str, Any]) -> list[provider_pb2.CheckFailure]:
    """What pulumi-random refuses in a RandomPassword's inputs (unknown values are checked once known)."""
    failures: list[provider_pb2.CheckFailure] = []

    def fail(key: str, reason: str) -> None:
        failures.append(provider_pb2.CheckFailure(property=key, reason=reason))

    length = inputs.get("length")
    if length is None:
        fail("length", "missing required property 'length'")
    minimums = {key: 0 if inputs.get(key) is None else inputs[key] for key in _MINIMUMS}
    for key, value in minimums.items():
        if not is_unknown(value) and not (isinstance(value, int) and value >= 0):
            fail(key, f"{key} must be an integer of at least 0, got {value!r}")
    if isinstance(length, int) and not isinstance(length, bool):
        if length < 1:
            fail("length", f"length must be at least 1, got {length}")
        known = [value for value in minimums.values() if isinstance(value, int) and value >= 0]
        if len(known) == len(minimums) and length < sum(known):
            fail("length", f"length {length} is less than the sum of minUpper, minLower, minNumeric and minSpecial")
    elif length is not None and not is_unknown(length):
        fail("length", f"length must be an integer, got {length!r}")
    numeric_key = "numeric" if "numeric" in inputs else "number"
    classes = [inputs.get(key) for key in ("upper", "lower", numeric_key, "special")]
    if all(value is False for value in classes):
        fail("special", "upper, lower, numeric and special are all false: at least one of them must be true")
    return failures


def generate_password(inputs: Mapping[str, Any]) -> str:
    """A password as terraform-provider-random makes one (internal/random/string.go): `min*` characters of each class
    (whether or not the class is enabled, as upstream does), the rest from the enabled classes, shuffled."""
    special = inputs.get("overrideSpecial") or DEFAULT_SPECIAL
    numeric = inputs.get("numeric") if inputs.get("numeric") is not None else inputs.get("number")
    # Every class is on unless set to false.
    sets = {
        "minUpper": (string.ascii_uppercase, inputs.get("upper") is not False),
        "minLower": (string.ascii_lowercase, inputs.get("lower") is not False),
        "minNumeric": (string.digits, numeric is not False),
        "minSpecial": (special, inputs.get("special") is not False),
    }
    chars = [secrets.choice(charset) for key, (charset, _) in sets.items() for _ in range(int(inputs.get(key) or 0))]
    pool = "".join(charset for charset, enabled in sets.values() if enabled)
    rest = int(inputs["length"]) - len(chars)
    if rest > 0 and not pool:
        raise Refused("no character class is enabled to draw the password from")
    chars += [secrets.choice(pool) for _ in range(rest)]
    secrets.SystemRandom().shuffle(chars)
    return "".join(chars)


def bcrypt_hash(password: str) -> str:
    # bcrypt reads at most 72 bytes; pulumi-random hashes the first 72 of a longer password.
    if bcrypt is not None:
        return str(bcrypt.hashpw(password.encode()[:72], bcrypt.gensalt(rounds=10)).decode())
    # Not a hash: the shape of one ($2a$, cost, 53 characters of salt and hash), as the mocks give it.
    return "$2a$10$" + "".join(secrets.choice(_BCRYPT_ALPHABET) for _ in range(53))


class RandomProvider(FakeProvider):
    package = "random"
    distribution = "pulumi_random"

    def __init__(self) -> None:
        super().__init__()
        self.mocks = PlatformMocks(region_from({}) or _NO_REGION)

    def _type(self, request: Any) -> str:
        type_ = type_token(request)
        if type_ != RANDOM_PASSWORD:
            raise Refused(f"the random fake knows {RANDOM_PASSWORD} only, not {type_}")
        return type_

    @handled
    def Check(self, request: provider_pb2.CheckRequest, context: grpc.ServicerContext) -> provider_pb2.CheckResponse:
        self._type(request)
        news = references_as_ids(to_dict(request.news))
        return provider_pb2.CheckResponse(inputs=to_struct(news), failures=password_failures(plain(news)))

    @handled
    def Diff(self, request: provider_pb2.DiffRequest, context: grpc.ServicerContext) -> provider_pb2.DiffResponse:
        news = to_dict(request.news)
        olds = to_dict(request.old_inputs) if request.HasField("old_inputs") else to_dict(request.olds)
        if not request.HasField("old_inputs"):
            olds = {key: value for key, value in olds.items() if key in news}
        return diff_response(changes(olds, news, replace_keys=set(olds) | set(news)))

    def _created(self, request: Any, wire: Mapping[str, Any], password: tuple[Any, Any] | None) -> tuple[str, Any]:
        """The mocks' id and outputs, with the password given (result, hash), or a new one, or unknown ones in
        preview."""
        args = pulumi_mocks.MockResourceArgs(
            typ=self._type(request), name=logical_name(request), inputs=masked(plain(wire)), custom=True
        )
        resource_id, computed = self.mocks.new_resource(args)
        outputs = merged_outputs(wire, computed)
        if password is None:
            if getattr(request, "preview", False) or contains_unknown(plain(wire)):
                password = (secret(UNKNOWN), secret(UNKNOWN))
            else:
                result = generate_password(plain(wire))
                password = (secret(result), secret(bcrypt_hash(result)))
        outputs["result"], outputs["bcryptHash"] = password
        return str(resource_id), to_struct(outputs)

    @handled
    def Create(self, request: provider_pb2.CreateRequest, context: grpc.ServicerContext) -> provider_pb2.CreateResponse:
        resource_id, outputs = self._created(request, to_dict(request.properties), None)
        return provider_pb2.CreateResponse(id=resource_id, properties=outputs)

    @handled
    def Update(self, request: provider_pb2.UpdateRequest, context: grpc.ServicerContext) -> provider_pb2.UpdateResponse:
        # Only reached when Diff found no replacing change (never for an input change): the password stays.
        olds = to_dict(request.olds)
        kept = (olds["result"], olds["bcryptHash"]) if "result" in olds and "bcryptHash" in olds else None
        _, outputs = self._created(request, to_dict(request.news), kept)
        return provider_pb2.UpdateResponse(properties=outputs)

    @handled
    def Read(self, request: provider_pb2.ReadRequest, context: grpc.ServicerContext) -> provider_pb2.ReadResponse:
        self._type(request)
        if not request.properties.fields:
            raise Refused(f"the random fake cannot import {request.id!r}: a password exists only in the state")
        return provider_pb2.ReadResponse(id=request.id, properties=request.properties, inputs=request.inputs)

    def Delete(self, request: provider_pb2.DeleteRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:
        return empty_pb2.Empty()

    @handled
    def Invoke(self, request: provider_pb2.InvokeRequest, context: grpc.ServicerContext) -> provider_pb2.InvokeResponse:
        raise Refused(f"the random fake answers no function, not {request.tok}")


def main() -> None:
    serve(RandomProvider())


if __name__ == "__main__":
    main()
