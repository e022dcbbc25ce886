"""The program floor: the stack's config aggregate and the program that builds the platform from it.

One module a job, each importing the parts' folders and nothing above them:

- `config`: `PlatformConfig`, every part's config in one frozen model, and the facts several parts read;
- `checks`: the checks across parts, which `PlatformConfig` runs when it is built;
- `parse`: `parse_config`, a stack's raw config into a `PlatformConfig`, with the environments' defaults;
- `secret_keys`: the secrets a stack's config names, and whether the stack holds them as secrets;
- `build`: `build_platform`, every part in the order of creation (`Platform`);
- `part_args`: what the program gives each part, and Kubeflow's plan;
- `aliases`: the parts' logical names and the aliases to earlier releases' names;
- `outputs`: the stack's outputs and the contract team stacks attach by;
- `entry`: `program`, what `pulumi up` and the offline preview run.

Importing this package loads nothing: config models and parsing (`config`, `parse`) load no resource code.
"""
