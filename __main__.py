"""What `pulumi up` runs: parse the stack's config, build the platform, export its outputs."""

from components.platform.entry import program

program()
