"""The navigation agent: Algorithm 1 and its modes, recorded as trajectories.

`episode.run_episode` runs one item; `loop` is Algorithm 1, `modes/` the agent modes (a registry).
The package root imports nothing: `giant.agent.config` and `giant.record.trajectory` are light shared
contracts that the config and eval layers import without pulling in OpenSlide and the providers.
"""
