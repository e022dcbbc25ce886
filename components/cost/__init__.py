"""`python -m components.cost --by-team --from YYYY-MM-DD --to YYYY-MM-DD`: what each team's GPUs cost, and
`python -m components.cost --stack NAME`: what a stack costs.

Only the command lives here, under the name the platform's docs give it; the code is `components.tools.cost`, whose
command (`python -m components.tools.cost`) is the same one.
"""
