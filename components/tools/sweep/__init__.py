"""The teardown sweep's command line: which cluster and VPC a stack names, and the sweep, dry run or leak check of
them (the sweep itself is `components.sweep`, run by `pulumi destroy`)."""
