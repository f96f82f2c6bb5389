"""Every setting declares its role once, on its field (giant.roles), and the key lists are read from
the roles: what a job hashes, what a re-score may change, what a comparison names as a difference."""

from __future__ import annotations

import pytest
from hydra import compose
from pydantic import BaseModel

from giant.config import RunOptions, RunSettings, record_keys, record_roles
from giant.eval.scoring_settings import ScoringSettings
from giant.roles import Method, Role, UndeclaredRole, hashed_part, role_of, roles

COMBINATIONS = [
    ["agent=giant", "provider=random"],
    ["agent=giant", "provider=anthropic", "agent.tools=[conch]"],
    ["agent=patch", "provider=openai", "dataset=tcga", "skip_missing=true"],
    ["agent=thumbnail", "provider=openai"],
    [
        "agent=random_regions",
        "provider=openai_compatible",
        "provider.model=m",
        "provider.base_url=http://x/v1",
    ],
]


def _settings(overrides: list[str]) -> RunSettings:
    return RunSettings.from_config(compose("config", overrides=[*overrides, "dry_run=true"]))


def _flat(data: dict[str, object], prefix: str = "") -> list[str]:
    keys = []
    for key, value in data.items():
        if isinstance(value, dict):
            keys += _flat(value, f"{prefix}{key}.")
        else:
            keys.append(f"{prefix}{key}")
    return keys


@pytest.mark.parametrize("overrides", COMBINATIONS)
def test_every_recorded_setting_has_a_role(hydra_init: None, overrides: list[str]) -> None:
    record = _settings(overrides).record()
    assert [key for key in _flat(record) if role_of(key, record_roles()) is None] == []


def test_a_setting_without_a_role_is_an_error() -> None:
    class Section(BaseModel):
        declared: Method[int]
        forgotten: int

    class Settings(BaseModel):
        section: Section

    with pytest.raises(UndeclaredRole, match=r"Section.forgotten \(section.forgotten\) declares no role"):
        roles(Settings)
    with pytest.raises(UndeclaredRole, match=r"section\.forgotten has no declared role"):
        hashed_part({"section": {"declared": 1, "forgotten": 2}}, {"section.declared": Role.METHOD})


def test_a_subclass_redeclaring_a_field_must_redeclare_its_role() -> None:
    """Overriding a field (a narrower type, another check) drops the parent's metadata with it."""

    class Child(ScoringSettings):
        bootstrap_replicates: int

    with pytest.raises(UndeclaredRole, match="bootstrap_replicates"):
        roles(Child)


def test_the_scoring_role_is_the_scoring_model() -> None:
    """Every scoring setting reaches the scorers: the one model they take holds all of them."""
    assert set(record_keys(Role.SCORING)) == set(ScoringSettings.model_fields)
    assert set(ScoringSettings.model_fields) < set(RunOptions.model_fields)


def test_the_roles_of_the_former_lists() -> None:
    """What the hand-kept lists said, now read from the fields (skip_missing stays hashed: DATA)."""
    table = record_roles()
    for key in ("concurrency", "budget_usd", "dry_run", "retry_failed", "resume", "record_requests"):
        assert table[key] is Role.OPERATIONAL, key
    for key in ("ledger", "breaker_after", "provider.rpm", "provider.tpm", "provider.timeout_s"):
        assert table[key] is Role.OPERATIONAL, key
    assert (table["limit"], table["item_ids"]) == (Role.SELECTION, Role.SELECTION)
    assert (table["runs_per_item"], table["skip_missing"], table["seed"]) == (
        Role.REPEATS,
        Role.DATA,
        Role.METHOD,
    )
    assert role_of("paths.wsi_root", table) is role_of("tracking.uri", table) is Role.OPERATIONAL
    assert role_of("dataset.name", table) is Role.DATA and not Role.DATA.compared


@pytest.mark.parametrize(
    ("overrides", "pinned"),
    [
        (COMBINATIONS[0], "13fdcb0666bf2bae"),
        (COMBINATIONS[1], "ee1cc1a5fd2e2b70"),
        (COMBINATIONS[2], "2c2e0d533c31c501"),
        (COMBINATIONS[3], "99af06ff10ec13af"),
        # provider.json_schema became a choice (response_format|guided_json|none) after these runs
        # were paid for; it is recorded as the old true/false so their keys still match
        (COMBINATIONS[4], "644dd50f12288f0c"),
        (
            [
                "agent=giant",
                "provider=openai_compatible",
                "provider.model=m",
                "provider.base_url=http://x/v1",
            ],
            "63324a9716acc308",
        ),
    ],
)
def test_config_hashes_of_existing_runs_are_unchanged(
    hydra_init: None, overrides: list[str], pinned: str
) -> None:
    """The hashes the hand-kept lists gave (issue 26): a job run before the roles still resumes. A
    change of a shipped default in conf/ changes them, as it changes the method."""
    assert _settings(overrides).config_hash() == pinned
