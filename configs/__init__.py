"""placerl's Hydra config tree, shipped in the wheel as ``placerl.configs`` (one copy)."""
