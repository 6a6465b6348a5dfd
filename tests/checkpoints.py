"""Small randomly initialised SigLIP checkpoints, built offline for the test tiers.

No model hub is reachable, so each checkpoint is built from transformers' config classes,
``save_pretrained`` into a directory together with a preprocessor config and a tiny
word-level tokenizer, and then loaded back through the production loader — the same
``from_pretrained`` code a real ``google/siglip-*`` checkpoint goes through.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

# Words the tests' labels use; anything else becomes [UNK], which is fine for a tokenizer
# whose only job is to feed the text tower deterministic ids.
VOCABULARY = [
    "[UNK]", "<pad>", "</s>", "a", "an", "the", "of", "photo", "picture", "scan", "image",
    "screenshot", "document", "page", "code", "source", "chest", "x-ray", "medical",
    "passport", "identity", "card", "car", "vehicle", "cat", "dog", "invoice", "report",
    "semiconductor", "wafer", "chip", "text", "diagram", "chart", "landscape", "gradient",
    "noise", "colourful",
]  # fmt: skip

# A realistic-looking temperature and bias put the probabilities of random embeddings
# around 0.5, where a probability comparison means something (real SigLIP: ~117, ~-12.7).
LOGIT_SCALE = 10.0
LOGIT_BIAS = -0.25


def build_tiny_siglip(
    directory: Path,
    *,
    image_size: int,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 4,
    intermediate_size: int = 128,
    patch_size: int = 16,
    seed: int = 0,
) -> Path:
    """Write a random SigLIP checkpoint with tokenizer and preprocessor config to ``directory``."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import (
        PreTrainedTokenizerFast,
        SiglipConfig,
        SiglipImageProcessorPil,
        SiglipModel,
        SiglipTextConfig,
        SiglipVisionConfig,
    )

    vocab = {word: index for index, word in enumerate(VOCABULARY)}
    text_config = SiglipTextConfig(
        vocab_size=len(vocab),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        max_position_embeddings=16,
        pad_token_id=vocab["<pad>"],
        eos_token_id=vocab["</s>"],
        bos_token_id=None,
    )
    vision_config = SiglipVisionConfig(
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        image_size=image_size,
        patch_size=patch_size,
    )
    torch.manual_seed(seed)
    model = SiglipModel(SiglipConfig(text_config=text_config, vision_config=vision_config))
    with torch.no_grad():
        model.logit_scale.fill_(math.log(LOGIT_SCALE))
        model.logit_bias.fill_(LOGIT_BIAS)
    model.save_pretrained(directory)

    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    # SigLIP's sentencepiece tokenizer appends </s>; so does this one.
    tokenizer.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", vocab["</s>"])]
    )
    wrapper: Any = PreTrainedTokenizerFast  # untyped in transformers
    wrapper(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="<pad>",
        eos_token="</s>",
        model_max_length=16,
        model_input_names=["input_ids"],
    ).save_pretrained(directory)
    SiglipImageProcessorPil(size={"height": image_size, "width": image_size}).save_pretrained(
        directory
    )
    return directory
