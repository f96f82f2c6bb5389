"""The model side: the tiny random CoCa-style model through the same loading, preprocessing and scoring
path as CONCH's weights (skipped without PyTorch, failing under CI)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from giant.config import CONF_DIR
from giant.errors import ConfigError
from giant.tools.conch.settings import ConchSettings

from .conftest import needs_torch

HYPOTHESES = ["tumour cells in dense sheets", "normal glands", "adipose tissue"]


@pytest.fixture(autouse=True)
def _torch() -> None:
    needs_torch()


def settings(**changes: Any) -> ConchSettings:
    """The shipped conf/tools/conch.yaml with `changes` (the values come from the one config file)."""
    from omegaconf import OmegaConf

    values = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "tools" / "conch.yaml"))
    assert isinstance(values, dict)
    return ConchSettings.model_validate({**values, "device": "cpu", **changes})


def tissue(seed: int, size: tuple[int, int] = (90, 70)) -> Image.Image:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    return Image.fromarray(pixels)


def test_tiny_random_scores_are_cosines_and_reproducible() -> None:
    from giant.tools.conch.load import load_conch

    first, second = load_conch(settings(weights="tiny-random")), load_conch(settings(weights="tiny-random"))
    image = tissue(1)
    scores = first.score(image, HYPOTHESES)
    assert scores == second.score(image, HYPOTHESES)  # two loads, the same weights and scores
    assert len(set(scores)) == 3 and all(-1.0 <= s <= 1.0 for s in scores)
    images, texts = first.embed_images([image]), first.embed_texts(HYPOTHESES)
    assert np.allclose(np.linalg.norm(images.numpy(), axis=1), 1.0)
    assert np.allclose(scores, (texts @ images[0]).numpy())
    assert first.score(tissue(2), HYPOTHESES) != scores  # the image matters
    other = load_conch(settings(weights="tiny-random", seed=1))
    assert other.score(image, HYPOTHESES) != scores  # and so does the seed


def test_a_batch_of_images_embeds_as_each_alone() -> None:
    from giant.tools.conch.load import load_conch

    scorer = load_conch(settings(weights="tiny-random"))
    images = [tissue(3), tissue(4, (40, 120))]
    batch = scorer.embed_images(images)
    alone = np.stack([scorer.embed_images([im])[0].numpy() for im in images])
    assert batch.shape == (2, 16) and np.allclose(batch.numpy(), alone, atol=1e-5)


def test_a_checkpoint_file_loads_strictly_through_the_real_path(tmp_path: Path) -> None:
    """A checkpoint as CONCH's is saved (DataParallel prefix, caption decoder keys, a saved mask)
    loads into a fresh model and scores exactly as the model it was saved from."""
    import torch

    from giant.tools.conch.load import load_strict, read_checkpoint
    from giant.tools.conch.model import CocaEncoder, randomise
    from giant.tools.conch.spec import TINY

    source = CocaEncoder(TINY)
    randomise(source, 7)
    state = {f"module.{k}": v for k, v in source.state_dict().items()}
    state["module.text_decoder.ln_final.weight"] = torch.ones(3)
    state["module.text.attn_mask"] = torch.zeros(TINY.context_length, TINY.context_length)
    path = tmp_path / "pytorch_model.bin"
    torch.save({"state_dict": state}, path)
    model = CocaEncoder(TINY)
    load_strict(model, read_checkpoint(path), str(path))
    pixels = torch.randn(1, 3, TINY.image_size, TINY.image_size)
    tokens = torch.tensor([[1, 9, 10, 11, 2] + [0] * (TINY.context_length - 5)])
    with torch.inference_mode():
        assert torch.equal(model.encode_image(pixels), source.eval().encode_image(pixels))
        assert torch.equal(model.encode_text(tokens), source.encode_text(tokens))


def test_a_wrong_checkpoint_is_one_line(tmp_path: Path) -> None:
    import torch

    from giant.tools.conch.load import load_conch

    path = tmp_path / "other.bin"
    torch.save({"visual.trunk.cls_token": torch.zeros(1, 1, 8), "head.weight": torch.zeros(2)}, path)
    with pytest.raises(ConfigError) as info:
        load_conch(settings(weights=str(path)))
    message = str(info.value)
    assert (
        "\n" not in message
        and "not a CONCH checkpoint" in message
        and "unexpected 1 (e.g. head.weight)" in message
    )
    (tmp_path / "junk.bin").write_bytes(b"not a checkpoint")
    with pytest.raises(ConfigError, match="not a readable PyTorch checkpoint"):
        load_conch(settings(weights=str(tmp_path / "junk.bin")))
    with pytest.raises(ConfigError, match="no such file"):
        load_conch(settings(weights=str(tmp_path / "missing.bin")))


def test_conch_sized_model_has_the_checkpoint_names_and_shapes() -> None:
    """The names and shapes the MahmoodLab/CONCH checkpoint uses (conch_ViT-B-16: ViT-B/16 at 448 px,
    512-d shared space, 128 tokens over a 32007-token vocabulary)."""
    from giant.tools.conch.model import CocaEncoder
    from giant.tools.conch.spec import CONCH

    shapes = {k: tuple(v.shape) for k, v in CocaEncoder(CONCH).state_dict().items()}
    expected = {
        "visual.trunk.pos_embed": (1, 785, 768),
        "visual.trunk.patch_embed.proj.weight": (768, 3, 16, 16),
        "visual.trunk.blocks.11.attn.qkv.weight": (2304, 768),
        "visual.trunk.blocks.11.mlp.fc2.weight": (768, 3072),
        "visual.attn_pool_contrast.query": (1, 512),
        "visual.attn_pool_contrast.attn.k_proj_weight": (512, 768),
        "visual.proj_contrast": (512, 512),
        "visual.attn_pool_caption.query": (256, 768),
        "text.token_embedding.weight": (32007, 768),
        "text.positional_embedding": (128, 768),
        "text.cls_emb": (768,),
        "text.transformer.resblocks.11.attn.in_proj_weight": (2304, 768),
        "text.transformer.resblocks.11.mlp.c_proj.weight": (768, 3072),
        "text.text_projection": (768, 512),
        "logit_scale": (),
    }
    assert {k: shapes.get(k) for k in expected} == expected
    assert not any(k.startswith("text_decoder.") for k in shapes)


def test_preprocessing_resizes_the_short_side_and_keeps_the_centre() -> None:
    import torch

    from giant.tools.conch.preprocess import fit, pixel_batch
    from giant.tools.conch.spec import TINY

    wide = Image.new("RGB", (200, 100), (255, 255, 255))
    wide.paste((0, 0, 0), (50, 0, 150, 100))  # a black central square
    fitted = fit(wide, 64)
    assert fitted.size == (64, 64)
    assert np.asarray(fitted).max() < 40  # only the centre is left
    batch = pixel_batch([Image.new("RGB", (64, 64), (255, 255, 255))], TINY)
    expected = (1 - torch.tensor(TINY.mean)) / torch.tensor(TINY.std)
    assert torch.allclose(batch[0, :, 5, 5], expected)


def test_bpe_tokenizer_layout_matches_the_hash_tokenizer(tmp_path: Path) -> None:
    """CONCH's tokenizer file format (byte-level BPE, lower case, start/end template) read with the
    `tokenizers` package: ids start with 1, end with 2, truncation keeps the end token."""
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    from giant.tools.conch.tokenize import END, PAD, START, BpeTokenizer, HashTokenizer, token_batch

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence(
        [normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase()]
    )
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<pad>", "<start_of_text>", "<end_of_text>"]
    )
    tok.train_from_iterator(["tumour cells in dense sheets", "normal glands and stroma"] * 20, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<start_of_text> $A <end_of_text>",
        special_tokens=[("<start_of_text>", 1), ("<end_of_text>", 2)],
    )
    path = tmp_path / "conch_byte_level_bpe_uncased.json"
    tok.save(str(path))
    bpe = BpeTokenizer(path)
    for tokenizer in (bpe, HashTokenizer(64)):
        rows = token_batch(tokenizer, ["Tumour CELLS", "normal " * 40], context_length=12)
        assert rows.shape == (2, 12)
        assert rows[0, 0] == START and END in rows[0].tolist() and rows[0, -1] == PAD
        assert rows[1, 0] == START and rows[1, 10] == END and rows[1, 11] == PAD  # truncated to 11 ids
    assert bpe.ids("Tumour", 10) == bpe.ids("tumour", 10)  # uncased


def test_missing_torch_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from giant.tools.conch.load import load_conch

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[conch\]'"):
        load_conch(settings(weights="tiny-random"))


def test_a_missing_tokenizer_names_where_to_get_it(tmp_path: Path) -> None:
    from giant.tools.conch.load import TOKENIZER_FILE, TOKENIZER_URL, tokenizer_file

    checkpoint = tmp_path / "pytorch_model.bin"
    checkpoint.write_bytes(b"weights")
    with pytest.raises(ConfigError) as info:
        tokenizer_file(settings(weights=str(checkpoint)), checkpoint)
    assert TOKENIZER_URL in str(info.value) and "\n" not in str(info.value)
    (tmp_path / TOKENIZER_FILE).write_text("{}")
    assert tokenizer_file(settings(weights=str(checkpoint)), checkpoint) == tmp_path / TOKENIZER_FILE
    with pytest.raises(ConfigError, match=r"tools\.conch\.tokenizer="):
        tokenizer_file(settings(weights=str(checkpoint), tokenizer=str(tmp_path / "none.json")), checkpoint)


def test_the_class_token_sees_the_text_as_conch_was_trained() -> None:
    """Causal attention everywhere; the class token (last row) also hides key j >= 1 when text token
    j-1 is padding, so with one padding token it sees every position but its own."""
    import torch

    from giant.tools.conch.model import TextTower
    from giant.tools.conch.spec import TINY

    mask = TextTower(TINY).attention_mask(torch.tensor([[1, 5, 2, 0]]))
    assert mask.shape == (TINY.text_heads, 5, 5)
    inf = float("-inf")
    causal = [[0.0 if j <= i else inf for j in range(5)] for i in range(4)]
    assert mask[0].tolist() == [*causal, [0.0, 0.0, 0.0, 0.0, inf]]
    assert torch.equal(mask[0], mask[1])  # the same for every head


def test_load_tools_loads_each_setting_once_per_process() -> None:
    from giant.tools import load_tools
    from giant.tools.conch.tool import ConchTool
    from giant.tools.settings import ToolSettings

    tiny = ToolSettings(conch=settings(weights="tiny-random"))
    [first] = load_tools(["conch"], tiny).values()
    assert load_tools(["conch"], tiny)["conch"] is first  # a sweep's second job reuses the weights
    assert isinstance(first, ConchTool) and first.max_hypotheses == 8
    other = ToolSettings(conch=settings(weights="tiny-random", seed=3))
    assert load_tools(["conch"], other)["conch"] is not first
    assert load_tools([], tiny) == {}  # a run without tools loads none


@pytest.mark.slow
def test_an_unreachable_hugging_face_repo_is_one_line(tmp_path: Path) -> None:
    import subprocess

    code = (
        "from giant.errors import ConfigError\n"
        "from giant.tools.conch.load import load_conch\n"
        "from giant.tools.conch.settings import ConchSettings\n"
        "try:\n"
        "    load_conch(ConchSettings(weights='MahmoodLab/CONCH', tokenizer=None, max_hypotheses=8,\n"
        "                             device='cpu', hf_token_env='GIANT_TEST_NO_TOKEN', seed=0))\n"
        "except ConfigError as err:\n"
        "    print(err)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    [line] = done.stdout.strip().splitlines()
    assert line.startswith("tools.conch.weights=MahmoodLab/CONCH: ")
    assert "pass tools.conch.weights=/path/to/pytorch_model.bin" in line


def test_a_score_depends_on_its_own_text_only_and_texts_are_embedded_once() -> None:
    from giant.tools.conch.load import load_conch

    scorer = load_conch(settings(weights="tiny-random"))
    image = tissue(5)
    together = scorer.score(image, HYPOTHESES)
    assert scorer.cached_texts == 3
    assert [scorer.score(image, [text])[0] for text in reversed(HYPOTHESES)] == together[::-1]
    assert scorer.cached_texts == 3  # nothing embedded again
    fresh = load_conch(settings(weights="tiny-random"))
    assert fresh.score(image, HYPOTHESES[::-1]) == together[::-1]  # order and history do not matter


def test_missing_tokenizers_is_one_line_before_any_checkpoint_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from giant.tools.conch.load import load_conch

    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(ConfigError, match=r"tokenizers package.*pip install -e '\.\[conch\]'"):
        load_conch(settings(weights=str(tmp_path / "never_read.bin")))


def test_a_device_this_machine_lacks_is_one_line() -> None:
    import torch

    from giant.tools.conch.load import device

    assert device("cpu") == torch.device("cpu")
    assert device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    for name, there in (("cuda:1", torch.cuda.is_available()), ("mps", torch.backends.mps.is_available())):
        if not there:
            with pytest.raises(
                ConfigError, match=rf"tools\.conch\.device={name}: .*tools\.conch\.device=cpu"
            ):
                device(name)
