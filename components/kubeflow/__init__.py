"""Kubeflow 26.03.1 on the platform: the pinned upstream manifests, rendered offline with the pinned kustomize,
changed for this platform (generated credentials, GPU notebooks and training on the GPU pools, storage, teams), and
registered object by object in ordered stages.

The modules are pure (plain dicts in and out) except `register`, which creates Pulumi resources and is imported
on its own. The order a program uses them in:

    root = fetch.tree(cfg.tree)                                     # verified tree (fetch it first)
    rendered = render.render(root, config.selected_entries(cfg), cache_dir=render.default_render_cache())
    staged = plan.build(rendered, config.settings(cfg, storage_class=..., gpu_node_pools=..., gpu_scheduler=...))
    register.register(staged, provider=k8s_provider, parent=stage_components, secrets=..., role_arns=...)
"""
