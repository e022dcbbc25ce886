"""EC2 instance facts every part reads alike: what an instance family's name says (category, generation,
architecture, accelerator) and what each accelerated family carries (`accelerators`, pinned in
`accelerated_families.yaml`)."""
