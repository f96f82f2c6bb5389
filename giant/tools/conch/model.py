"""A CoCa-style image-text encoder in plain PyTorch, laid out so that CONCH's checkpoint loads into it
with `load_state_dict(strict=True)`: every parameter name below is the checkpoint's.

Only the two encoders are built. CONCH's caption decoder (`text_decoder.*`, about 200M parameters)
plays no part in image-text similarity, so the loader drops those keys before the strict load.

Image tower (`visual`): a ViT (`trunk`, timm's parameter names: patch_embed, cls_token, pos_embed,
blocks.N.{norm1, attn.qkv, attn.proj, norm2, mlp.fc1, mlp.fc2}, norm), then an attentional pooler with
one query (`attn_pool_contrast`), a LayerNorm and a square projection into the shared space. A second
pooler with many queries (`attn_pool_caption`) feeds only the decoder; it is kept so the tower loads
whole.

Text tower (`text`): token and position embeddings, a class token appended after the text, a causal
transformer (`transformer.resblocks.N.{ln_1, attn, ln_2, mlp.c_fc, mlp.c_proj}`), the class token's
final state through `ln_final` and `text_projection`.
"""

from __future__ import annotations

from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

from giant.tools.conch.spec import ModelSpec

VIT_EPS = 1e-6  # timm's ViT LayerNorms
TEXT_EPS = 1e-5  # torch's default, used by the poolers and the text tower


class PatchEmbed(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, spec.vision_width, kernel_size=spec.patch_size, stride=spec.patch_size)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.proj(pixels).flatten(2).transpose(1, 2)  # (B, patches, width)


class SelfAttention(nn.Module):
    """timm's fused-qkv attention."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, width = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.heads, width // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(batch, tokens, width))


class Mlp(nn.Module):
    def __init__(self, width: int, ratio: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, width * ratio)
        self.fc2 = nn.Linear(width * ratio, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class VisionBlock(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        width = spec.vision_width
        self.norm1 = nn.LayerNorm(width, eps=VIT_EPS)
        self.attn = SelfAttention(width, spec.vision_heads)
        self.norm2 = nn.LayerNorm(width, eps=VIT_EPS)
        self.mlp = Mlp(width, spec.mlp_ratio)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTrunk(nn.Module):
    """Patch tokens plus a class token, with learned positions, through the blocks; returns every
    token (class token first) after the final norm."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        width = spec.vision_width
        self.patch_embed = PatchEmbed(spec)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + spec.grid**2, width))
        self.blocks = nn.ModuleList(VisionBlock(spec) for _ in range(spec.vision_layers))
        self.norm = nn.LayerNorm(width, eps=VIT_EPS)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        patches = self.patch_embed(pixels)
        cls = self.cls_token.expand(patches.shape[0], -1, -1)
        x = torch.cat([cls, patches], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.norm(x)


class AttentionalPooler(nn.Module):
    """Learned queries attend over the image tokens (keys and values may be wider than the queries)."""

    def __init__(self, dim: int, context_dim: int, heads: int, queries: int) -> None:
        super().__init__()
        self.query = nn.Parameter(torch.zeros(queries, dim))
        self.attn = nn.MultiheadAttention(dim, heads, kdim=context_dim, vdim=context_dim, batch_first=True)
        self.ln_q = nn.LayerNorm(dim, eps=TEXT_EPS)
        self.ln_k = nn.LayerNorm(context_dim, eps=TEXT_EPS)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        keys = self.ln_k(tokens)
        queries = self.ln_q(self.query).unsqueeze(0).expand(tokens.shape[0], -1, -1)
        out: torch.Tensor = self.attn(queries, keys, keys, need_weights=False)[0]
        return out


class VisualTower(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.trunk = VisionTrunk(spec)
        dim = spec.embed_dim
        self.attn_pool_contrast = AttentionalPooler(dim, spec.vision_width, spec.pooler_heads, 1)
        self.ln_contrast = nn.LayerNorm(dim, eps=TEXT_EPS)
        self.proj_contrast = nn.Parameter(torch.zeros(dim, dim))
        self.attn_pool_caption = AttentionalPooler(
            spec.caption_dim, spec.vision_width, spec.pooler_heads, spec.caption_queries
        )
        self.ln_caption = nn.LayerNorm(spec.caption_dim, eps=TEXT_EPS)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        """The image's embedding in the shared space (not yet unit length)."""
        pooled = self.attn_pool_contrast(self.trunk(pixels))[:, 0]
        projected: torch.Tensor = self.ln_contrast(pooled) @ self.proj_contrast
        return projected


class TextBlock(nn.Module):
    def __init__(self, width: int, heads: int, ratio: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(width, eps=TEXT_EPS)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln_2 = nn.LayerNorm(width, eps=TEXT_EPS)
        self.mlp = nn.Sequential(
            OrderedDict(
                c_fc=nn.Linear(width, width * ratio), gelu=nn.GELU(), c_proj=nn.Linear(width * ratio, width)
            )
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, need_weights=False, attn_mask=mask)[0]
        return x + self.mlp(self.ln_2(x))


class TextStack(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.resblocks = nn.ModuleList(
            TextBlock(spec.text_width, spec.text_heads, spec.mlp_ratio) for _ in range(spec.text_layers)
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for block in self.resblocks:
            x = block(x, mask)
        return x


class TextTower(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.spec = spec
        width = spec.text_width
        self.token_embedding = nn.Embedding(spec.vocab_size, width)
        self.positional_embedding = nn.Parameter(torch.zeros(spec.context_length, width))
        self.cls_emb = nn.Parameter(torch.zeros(width))
        self.transformer = TextStack(spec)
        self.ln_final = nn.LayerNorm(width, eps=TEXT_EPS)
        self.text_projection = nn.Parameter(torch.zeros(width, spec.embed_dim))

    def attention_mask(self, text: torch.Tensor) -> torch.Tensor:
        """Additive mask, one (L+1) x (L+1) matrix per sequence and head: causal everywhere; the class
        token's row (last) also hides the key at position j >= 1 when text token j-1 is padding. The
        one-position offset is how the released model was trained, so it is kept as it is."""
        batch, length = text.shape
        size = length + 1
        causal = torch.full((size, size), float("-inf"), device=text.device).triu(1)
        visible = torch.cat([torch.ones_like(text[:, :1], dtype=torch.bool), text != self.spec.pad_id], dim=1)
        cls_row = torch.zeros(batch, size, device=text.device).masked_fill(~visible, float("-inf"))
        mask = causal.expand(batch, size, size).clone()
        mask[:, -1, :] += cls_row
        return mask.repeat_interleave(self.spec.text_heads, dim=0)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """`tokens` (B, context_length) from the tokenizer, whose last column is a placeholder: the
        class token takes its place. Returns the text embedding in the shared space."""
        text = tokens[:, :-1]
        x = self.token_embedding(text)
        x = torch.cat([x, self.cls_emb.expand(x.shape[0], 1, -1)], dim=1)
        x = x + self.positional_embedding[: x.shape[1]]
        x = self.transformer(x, self.attention_mask(text))
        projected: torch.Tensor = self.ln_final(x[:, -1]) @ self.text_projection
        return projected


class CocaEncoder(nn.Module):
    """The image and text encoders of a CoCa-style model; unit-length embeddings, so a dot product is
    the cosine similarity."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.spec = spec
        self.visual = VisualTower(spec)
        self.text = TextTower(spec)
        self.logit_scale = nn.Parameter(torch.zeros(()))  # trained temperature; unused for cosines

    def encode_image(self, pixels: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.visual(pixels), dim=-1)

    def encode_text(self, tokens: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.text(tokens), dim=-1)


def randomise(model: nn.Module, seed: int) -> None:
    """Deterministic random weights (the `tiny-random` model): every parameter drawn from one seeded
    generator in name order, LayerNorm scales around one, so the same seed gives the same model on any
    machine."""
    generator = torch.Generator().manual_seed(seed)
    norms = {f"{name}.weight" for name, module in model.named_modules() if isinstance(module, nn.LayerNorm)}
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            noise = torch.randn(param.shape, generator=generator) * 0.02
            param.copy_(noise + 1.0 if name in norms else noise)
