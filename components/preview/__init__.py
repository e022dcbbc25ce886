"""`python -m components.preview --stack dev --out build/preview/dev`: the offline preview's command.

Only the command lives here, where the documented name promises it; the preview itself (mocks, inventory, output
folder, policy report) is `components.tools.preview`.
"""
