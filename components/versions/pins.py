"""What a pin is: an exact version (`Pin`), a Helm chart (`ChartPin`, with how its CRDs follow a bump), an upstream
repository at a commit (`SourcePin`), the pinned Helm binary (`HelmPin`), and an exact image in place of a moving tag
(`ImagePin`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

#: An OCI content digest as registries and the publishers' records write it: `sha256:` and 64 lowercase hex digits.
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Pin:
    """An exact version of something the platform installs, and the upstream place it was read from.

    An image pin also carries the digest of that tag where the publisher records one (`digest`, read from the place
    `source` names); None where no publisher's record of it could be read, and the image is then pinned by tag only.
    """

    name: str
    version: str
    source: str
    digest: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.digest is not None and not DIGEST.fullmatch(self.digest):
            raise ValueError(f"{self.name} {self.version}: digest {self.digest!r} is not sha256:<64 hex digits>")

    @property
    def image_tag(self) -> str:
        """What follows `<repository>:` in an image reference: `<tag>@<digest>` where the digest is pinned (the
        runtime pulls by digest, the tag stays for people to read), else the tag alone."""
        return f"{self.version}@{self.digest}" if self.digest else self.version


class CrdUpgrade(StrEnum):
    """How a chart's CRDs follow a version bump. Helm installs a chart's `crds/` folder once and never upgrades it,
    so every chart with CRDs needs one of the answers below."""

    #: The chart ships no CRDs.
    NONE = "none"
    #: The CRDs are templates of the chart itself (a `*-crd` chart), so every upgrade updates them.
    TEMPLATES = "templates"
    #: A separate release (the `*-crd` chart) owns them; this one is installed with skip_crds.
    OWN_RELEASE = "own-release"
    #: The chart's own pre-upgrade hook job applies them; our values turn it on.
    CHART_HOOK = "chart-hook"
    #: Nothing upgrades them: apply the new CRDs by hand before `pulumi up` when a bump changes them (the README
    #: says how, per chart).
    MANUAL = "manual"


@dataclass(frozen=True)
class ChartPin:
    """A Helm chart at an exact version, from its repository (`oci://...` registries included), and how its CRDs
    follow a version bump."""

    name: str
    version: str
    repo: str
    source: str
    crds: CrdUpgrade = CrdUpgrade.NONE
    #: The chart's folder in its source repository, where it is not named as the chart (None: the chart's name).
    folder: str | None = None


@dataclass(frozen=True)
class HelmPin(Pin):
    """The Helm binary the offline checks render charts with: shipped inside a registry package, digest-checked."""

    package: str
    layer_path: str
    binary_path: str
    sha256: str


@dataclass(frozen=True)
class SourcePin:
    """One upstream repository at an exact commit, and where its files sit in the local tree."""

    repository: str  # owner/name on GitHub
    ref: str  # the tag the commit was read from
    commit: str
    folder: str  # the tree folder its files go to (paths inside the archive are kept below it)

    @property
    def archive_url(self) -> str:
        # Codeload serves an archive of exactly this commit; a tag could be moved, a commit cannot.
        return f"https://github.com/{self.repository}/archive/{self.commit}.tar.gz"

    @property
    def archive_root(self) -> str:
        """The single top-level folder of GitHub's archive: `<name>-<full commit>`."""
        return f"{self.repository.split('/')[1]}-{self.commit}"


@dataclass(frozen=True)
class ImagePin:
    """An exact image in place of one that upstream's manifests name by a moving tag (a tag that a publisher moves
    to each new build of a line: `mysql:8.4`): `pin` is the exact tag that line named when the pin was cut, with its
    index digest where the publisher records one, and the record it was read from."""

    moving: str  # the reference exactly as the rendered manifests carry it
    pin: Pin

    @property
    def repository(self) -> str:
        return self.moving.rsplit(":", 1)[0] if ":" in self.moving else self.moving

    @property
    def image(self) -> str:
        return f"{self.repository}:{self.pin.image_tag}"
