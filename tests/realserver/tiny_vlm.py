"""A tiny randomly initialised LLaVA, built offline in seconds, for a real `transformers serve`.

No download: a CLIP vision tower and a Llama text model of a few hundred thousand parameters, a
byte-level BPE tokenizer trained here on a few strings, the PIL image processor (no torchvision) and
a chat template that places one `<image>` per image part. Its replies are random bytes, which is what
the agent must survive from a real model too (a model failure with its reason is a measurement).

Context: `max_position_embeddings` (CONTEXT tokens) is the model's whole context; a prompt longer
than that is what a context overflow looks like on this server.
"""

from __future__ import annotations

from pathlib import Path

IMAGE_SIDE = 32  # px the processor resizes every image to
PATCH = 8  # -> (32/8)^2 = 16 image tokens per image
IMAGE_TOKENS = (IMAGE_SIDE // PATCH) ** 2
CONTEXT = 2048  # max_position_embeddings: the text model's context, in tokens
IMAGE_TOKEN = "<image>"
SPECIALS = ["<pad>", "<s>", "</s>", IMAGE_TOKEN]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ message['role'] }}: "
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}\n{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}"
)
_CORPUS = [
    '{"reasoning": "tissue", "action": {"action_type": "crop", "x": 10, "y": 20, "width": 300}}',
    '{"action": {"action_type": "answer", "answer": "A"}}',
    "Reply with OK. The slide shows tumour, stroma, necrosis and normal tissue.",
]


def build_tiny_vlm(out: Path, *, seed: int = 0, hidden: int = 64) -> Path:
    """Write a loadable LLaVA checkpoint (config, weights, tokenizer, processor) to `out`; returns it.
    Two different seeds give two different models (the sweep test serves two)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    torch.manual_seed(seed)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator(_CORPUS, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token=None
    )
    tokenizer.add_special_tokens({"additional_special_tokens": [IMAGE_TOKEN]})
    tokenizer.chat_template = CHAT_TEMPLATE
    vocab = len(tokenizer)
    image_token_id = tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)

    vision = CLIPVisionConfig(
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=2,
        num_attention_heads=4,
        image_size=IMAGE_SIDE,
        patch_size=PATCH,
        projection_dim=hidden,
    )
    text = LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=CONTEXT,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=image_token_id,
        image_seq_length=IMAGE_TOKENS,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    model = LlavaForConditionalGeneration(config).eval()
    model.generation_config.do_sample = False
    model.generation_config.max_new_tokens = 32
    images = CLIPImageProcessorPil(
        size={"shortest_edge": IMAGE_SIDE},
        crop_size={"height": IMAGE_SIDE, "width": IMAGE_SIDE},
    )
    processor = LlavaProcessor(
        image_processor=images,
        tokenizer=tokenizer,
        patch_size=PATCH,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE,
        image_token=IMAGE_TOKEN,
    )
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out
