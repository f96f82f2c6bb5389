"""Build the CONCH scorer from `tools.conch.weights`: `tiny-random`, a checkpoint file, or a Hugging
Face repo id (gated: the token comes from the environment variable `tools.conch.hf_token_env`).

Every source goes through the same path: a state dict, a freshly built `CocaEncoder`,
`load_state_dict(strict=True)`, the scorer. Anything wrong is one ConfigError line naming the fix.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from giant.errors import ConfigError
from giant.tools.conch.settings import ConchSettings

TINY_RANDOM = "tiny-random"
CHECKPOINT_FILE = "pytorch_model.bin"  # the file name in the MahmoodLab/CONCH repository
TOKENIZER_FILE = "conch_byte_level_bpe_uncased.json"
TOKENIZER_URL = (
    "https://github.com/mahmoodlab/CONCH/raw/main/conch/open_clip_custom/tokenizers/" + TOKENIZER_FILE
)
DROPPED_PREFIX = "text_decoder."  # the caption decoder: no part of image-text similarity
MASK_SUFFIX = "attn_mask"  # a causal mask some checkpoints carry as a buffer; the model builds its own
INSTALL = "pip install -e '.[conch]' (PyTorch and tokenizers)"


def load_conch(settings: ConchSettings) -> Any:
    """The scorer for these settings (a ConchScorer); ConfigError when it cannot be had."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ConfigError(f"agent.tools=[conch] needs PyTorch, which is not installed: {INSTALL}") from None
    if settings.weights != TINY_RANDOM:  # checked before a checkpoint of 1.5 GB is read or fetched
        try:
            import tokenizers  # noqa: F401
        except ImportError:
            raise ConfigError(
                f"CONCH's tokenizer needs the tokenizers package, not installed: {INSTALL}"
            ) from None
    from giant.tools.conch.model import CocaEncoder, randomise
    from giant.tools.conch.scorer import ConchScorer
    from giant.tools.conch.spec import CONCH, TINY
    from giant.tools.conch.tokenize import BpeTokenizer, HashTokenizer, Tokenizer

    tokenizer: Tokenizer
    if settings.weights == TINY_RANDOM:
        source = CocaEncoder(TINY)
        randomise(source, settings.seed)
        model = CocaEncoder(TINY)
        load_strict(model, source.state_dict(), settings.weights)
        tokenizer, label = HashTokenizer(TINY.vocab_size), f"{TINY_RANDOM} (seed {settings.seed})"
    else:
        checkpoint = checkpoint_file(settings)
        model = CocaEncoder(CONCH)
        load_strict(model, read_checkpoint(checkpoint), settings.weights)
        tokenizer, label = BpeTokenizer(tokenizer_file(settings, checkpoint)), f"CONCH ({settings.weights})"
    return ConchScorer(model, tokenizer, device(settings.device), label)


def read_checkpoint(path: Path) -> dict[str, Any]:
    """The encoder's tensors from a checkpoint: a bare state dict or one under "state_dict", with or
    without DataParallel's "module." prefix; the caption decoder's keys and saved attention masks
    left out."""
    import torch

    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ConfigError(
            f"tools.conch.weights={path}: not a readable PyTorch checkpoint ({type(exc).__name__}); "
            f"pass CONCH's {CHECKPOINT_FILE}"
        ) from None
    if isinstance(data, dict) and isinstance(data.get("state_dict"), dict):
        data = data["state_dict"]
    if not isinstance(data, dict):
        raise ConfigError(f"tools.conch.weights={path}: holds no state dict; pass CONCH's {CHECKPOINT_FILE}")
    state = {str(key).removeprefix("module."): value for key, value in data.items()}
    return {
        key: value
        for key, value in state.items()
        if not key.startswith(DROPPED_PREFIX) and not key.endswith(MASK_SUFFIX)
    }


def load_strict(model: Any, state: dict[str, Any], source: str) -> None:
    """Every parameter named and shaped as the model expects, or one line saying what differs."""
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    wrong = sorted(k for k in set(expected) & set(state) if tuple(expected[k].shape) != tuple(state[k].shape))
    if missing or unexpected or wrong:
        parts = [
            f"{what} {len(keys)} (e.g. {keys[0]})"
            for what, keys in (("missing", missing), ("unexpected", unexpected), ("wrong shape", wrong))
            if keys
        ]
        raise ConfigError(
            f"tools.conch.weights={source}: not a CONCH checkpoint ({'; '.join(parts)}); "
            f"pass CONCH's {CHECKPOINT_FILE}"
        )
    model.load_state_dict(state, strict=True)


def checkpoint_file(settings: ConchSettings) -> Path:
    """A local file as it is; otherwise a Hugging Face repo id, downloaded once into its cache."""
    path = Path(settings.weights).expanduser()
    if path.is_file():
        return path
    if path.exists() or settings.weights.count("/") != 1 or settings.weights.startswith((".", "/", "~")):
        raise ConfigError(
            f"tools.conch.weights={settings.weights}: no such file; pass CONCH's {CHECKPOINT_FILE}, "
            f"a Hugging Face repo id (MahmoodLab/CONCH) or {TINY_RANDOM}"
        )
    return Path(_download(settings, CHECKPOINT_FILE))


def tokenizer_file(settings: ConchSettings, checkpoint: Path) -> Path:
    """tools.conch.tokenizer, else the tokenizer JSON beside the checkpoint, else the repo's copy."""
    if settings.tokenizer is not None:
        if not settings.tokenizer.is_file():
            raise ConfigError(
                f"tools.conch.tokenizer={settings.tokenizer}: no such file; download {TOKENIZER_URL}"
            )
        return settings.tokenizer
    beside = checkpoint.with_name(TOKENIZER_FILE)
    if beside.is_file():
        return beside
    if Path(settings.weights).expanduser().is_file():
        raise ConfigError(
            f"CONCH's tokenizer is not beside {checkpoint}: download {TOKENIZER_URL} there, "
            "or pass tools.conch.tokenizer=PATH"
        )
    return Path(
        _download(
            settings,
            TOKENIZER_FILE,
            missing_hint=f"download {TOKENIZER_URL} and pass tools.conch.tokenizer=PATH",
        )
    )


def _download(settings: ConchSettings, filename: str, missing_hint: str = "") -> str:
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import (
            EntryNotFoundError,
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
        )
    except ImportError:
        raise ConfigError(f"downloading CONCH needs huggingface_hub: {INSTALL}") from None
    token = os.environ.get(settings.hf_token_env) or None
    repo = settings.weights
    try:
        return str(hf_hub_download(repo_id=repo, filename=filename, token=token))
    except LocalEntryNotFoundError:  # caught before EntryNotFoundError, its parent: the Hub was not asked
        raise ConfigError(
            f"tools.conch.weights={repo}: {filename} is not in the Hugging Face cache and the Hub cannot "
            f"be reached (offline, or HF_HUB_OFFLINE=1); rerun online once, or pass "
            f"tools.conch.weights=/path/to/{CHECKPOINT_FILE}"
        ) from None
    except EntryNotFoundError as exc:
        if not missing_hint:
            raise _not_downloaded(repo, filename, exc) from None
        raise ConfigError(f"{repo} has no {filename}: {missing_hint}") from None
    except HfHubHTTPError as exc:
        # a gated repo asked without a token or accepted terms, or an unknown one (the Hub answers
        # 404 for a private repo it will not show)
        denied = isinstance(exc, (GatedRepoError, RepositoryNotFoundError))
        if not denied and exc.response.status_code not in (401, 403):
            raise _not_downloaded(repo, filename, exc) from None
        how = "" if token else f" and set {settings.hf_token_env} to your token"
        raise ConfigError(
            f"tools.conch.weights={repo}: access denied ({type(exc).__name__}); accept the model's terms at "
            f"https://huggingface.co/{repo}{how}, or pass tools.conch.weights=/path/to/{CHECKPOINT_FILE}"
        ) from None
    except Exception as exc:  # a network or disk failure: whatever it is, one line
        raise _not_downloaded(repo, filename, exc) from None


def _not_downloaded(repo: str, filename: str, exc: Exception) -> ConfigError:
    """The one line for a download that failed with no cause the user can fix on the Hub."""
    first = (str(exc).splitlines() or [""])[0][:160]
    return ConfigError(
        f"tools.conch.weights={repo}: could not download {filename} ({type(exc).__name__}: {first}); "
        f"pass tools.conch.weights=/path/to/{CHECKPOINT_FILE}"
    )


def device(name: str) -> Any:
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"tools.conch.device={name}: no CUDA device here; pass tools.conch.device=cpu")
    if name == "mps" and not torch.backends.mps.is_available():
        raise ConfigError("tools.conch.device=mps: no Apple GPU here; pass tools.conch.device=cpu")
    return torch.device(name)
