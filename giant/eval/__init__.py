"""Scoring: answer extraction, metrics, bootstrap, voting, and the batch runner.

`items` (`JobData`), `runner` (`run_eval`), `metrics` (`score`), `scoring` (`score_trajectory`), `voting`
(`majority_vote`), `dryrun` (`dry_run`), `resume`. The package root imports nothing: the runner
pulls the agent, the providers and OpenSlide, while `run_options` and `scoring_settings` are light
settings models that giant.config imports.
"""
