"""The package's tools: they run the library (under Pulumi's mocks, or against AWS with boto3), and the library never
imports them.

- `preview`: the offline preview (`python -m components.preview`), its mocks and the destroy estimate;
- `preflight`: read-only checks of the AWS account a stack deploys to (`python -m components.tools.preflight`);
- `cost`: a stack's idle baseline and GPU spend ceiling (`python -m components.tools.cost`);
- `sweep`: the teardown sweep's command line and leak check (`python -m components.tools.sweep`);
- `cluster_model`: the model of the running platform the preview judges (`python -m components.tools.cluster_model`);
- `config_reference`: the configuration reference, written from the config models
  (`python -m components.tools.config_reference`).
"""
