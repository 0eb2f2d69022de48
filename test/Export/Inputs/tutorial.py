"""Stock transformers called as PyTorch's tutorials call them: a causal
mask passed, no is_causal hint (factories for gradcomm-export)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from gradcomm.torch.export import StepSpec

CONTEXT = 8


def lm_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           targets.reshape(-1))


class EncoderLM(nn.Module):
    """As the word_language_model tutorial: nn.TransformerEncoder and the
    square subsequent mask."""

    def __init__(self, vocab=64, width=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, 2, 64, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(width, vocab)
        self.register_buffer(
            "mask", nn.Transformer.generate_square_subsequent_mask(CONTEXT))

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens), self.mask))


class Seq2Seq(nn.Module):
    """nn.Transformer with the target's causal mask."""

    def __init__(self, vocab=64, width=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.transformer = nn.Transformer(width, 2, 1, 1, 64, dropout=0.0,
                                          batch_first=True)
        self.head = nn.Linear(width, vocab)
        self.register_buffer(
            "mask", nn.Transformer.generate_square_subsequent_mask(CONTEXT))

    def forward(self, tokens):
        x = self.embed(tokens)
        return self.head(self.transformer(x, x, tgt_mask=self.mask))


def _spec(model):
    return StepSpec(model, input_shape=(CONTEXT,), input_dtype=torch.int64,
                    target_shape=(CONTEXT,), loss_fn=lm_loss)


def encoder_lm():
    torch.manual_seed(0)
    return _spec(EncoderLM())


def seq2seq():
    torch.manual_seed(0)
    return _spec(Seq2Seq())
