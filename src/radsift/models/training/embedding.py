"""Length-bucketed forward passes for training batches.

A batch of report sentences pads every text to its longest one: on Open-i a random batch of 64
sentences pads to about 40 tokens while the mean is 17, so most of the compute of a plain
forward pass goes to padding (and CPU time is what bounds training here). This module embeds
all the texts of a step (anchors, positives, negatives) sorted by length in small chunks, so
each chunk pads only to its own longest text, then hands the embeddings back in column order.
The result equals one padded forward pass (attention masks make padding inert) up to dropout
sampling; the losses then run on the embeddings (``compute_loss_from_embeddings`` of the
sentence-transformers loss modules).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import torch


def embed_columns_bucketed(model, columns: Sequence[Sequence[str]], chunk_size: int = 16) -> list[torch.Tensor]:
    """Embed several columns of texts with gradients, in length-sorted chunks.

    Args:
        model: A SentenceTransformer (its current ``max_seq_length`` applies).
        columns: Lists of texts (e.g. anchors, positives, negatives).
        chunk_size: Texts per forward pass.

    Returns:
        One ``(len(column), dim)`` tensor of sentence embeddings per column.
    """
    import torch  # heavy: imported when training starts, so the package imports without it

    texts = [t for col in columns for t in col]
    tokenizer = model.tokenizer
    lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=True, truncation=True,
                                             max_length=model.max_seq_length)["input_ids"]]
    order = sorted(range(len(texts)), key=lambda i: lengths[i])
    pieces = []
    for start in range(0, len(order), chunk_size):
        idx = order[start: start + chunk_size]
        features = model.preprocess([texts[i] for i in idx])
        device = model.device  # the model's own (the forward pass does not move its inputs)
        features = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}
        pieces.append(model(features)["sentence_embedding"])
    sorted_emb = torch.cat(pieces)
    dev = sorted_emb.device
    inverse = torch.empty(len(order), dtype=torch.long, device=dev)
    inverse[torch.tensor(order, device=dev)] = torch.arange(len(order), device=dev)
    emb = sorted_emb[inverse]
    out, offset = [], 0
    for col in columns:
        out.append(emb[offset: offset + len(col)])
        offset += len(col)
    return out
