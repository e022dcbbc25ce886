"""What `pulumi up` runs: parse the stack's config, build the platform, export its outputs."""

from components.stack import program

program()
