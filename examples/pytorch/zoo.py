"""The model zoo: stock architectures from torchvision and torch.nn, built
from code with random weights (nothing is downloaded), each as a
gradcomm-export factory (`zoo.py:resnet18`, ...) returning a StepSpec.

Inputs are small (32x32 images, 10 classes; 16-token contexts) so that
export, compile and a few steps fit a 2-core CI machine; the architectures
themselves are the stock ones. `ZOO` lists every factory;
test/Python/zoo.py exports and compiles them all."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from gradcomm.torch.export import StepSpec

IMAGE = (3, 32, 32)
CLASSES = 10


def _vision(build, **kwargs):
    """A torchvision classifier with 10 classes and random weights, on
    IMAGE-shaped inputs (read at the call: a study may set zoo.IMAGE)."""
    import torchvision.models as models

    torch.manual_seed(0)
    model = getattr(models, build)(weights=None, num_classes=CLASSES,
                                   **kwargs)
    return StepSpec(model, IMAGE)


def resnet18():
    return _vision("resnet18")


def resnet50():
    return _vision("resnet50")


def mobilenet_v2():
    return _vision("mobilenet_v2")


def mobilenet_v3_small():
    return _vision("mobilenet_v3_small")


def efficientnet_b0():
    return _vision("efficientnet_b0")


def shufflenet_v2():
    return _vision("shufflenet_v2_x0_5")


def squeezenet():
    return _vision("squeezenet1_1")


def densenet():
    # densenet121's dense blocks and transitions (concatenation, 1x1 conv,
    # avg pool), fewer and narrower layers: a CI-sized graph.
    from torchvision.models.densenet import DenseNet

    torch.manual_seed(0)
    return StepSpec(DenseNet(growth_rate=12, block_config=(2, 2, 2),
                             num_init_features=16, num_classes=CLASSES),
                    IMAGE)


def regnet():
    return _vision("regnet_x_400mf")


def convnext():
    # convnext_tiny's block (depthwise 7x7, channels-last LayerNorm, layer
    # scale, stochastic depth) at reduced width and depth.
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    torch.manual_seed(0)
    settings = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1),
                CNBlockConfig(64, None, 1)]
    return StepSpec(ConvNeXt(settings, stochastic_depth_prob=0.1,
                             num_classes=CLASSES), IMAGE)


def vit():
    from torchvision.models.vision_transformer import VisionTransformer

    torch.manual_seed(0)
    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                              num_heads=2, hidden_dim=32, mlp_dim=64,
                              num_classes=CLASSES)
    return StepSpec(model, IMAGE)


def swin():
    from torchvision.models.swin_transformer import SwinTransformer

    torch.manual_seed(0)
    model = SwinTransformer(patch_size=[2, 2], embed_dim=16, depths=[2, 2],
                            num_heads=[2, 4], window_size=[4, 4],
                            stochastic_depth_prob=0.1, num_classes=CLASSES)
    return StepSpec(model, IMAGE)


class EncoderLM(nn.Module):
    """A character language model on nn.TransformerEncoder (causal mask,
    GELU, pre-norm)."""

    def __init__(self, vocab=64, dim=32, heads=2, layers=2, context=16):
        super().__init__()
        self.vocab = vocab
        self.token = nn.Embedding(vocab, dim)
        self.position = nn.Parameter(torch.zeros(context, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.1,
                                           activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(context), persistent=False)

    def forward(self, tokens):
        x = self.token(tokens) + self.position[:tokens.shape[1]]
        # The mask alone, as PyTorch's tutorials pass it (no is_causal).
        return self.head(self.encoder(x, mask=self.mask))


class GPTBlock(nn.Module):
    """A GPT-2 block: causal scaled_dot_product_attention, tanh GELU."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.attn(self.ln1(x)).chunk(3, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.drop(self.proj(y.transpose(1, 2).reshape(b, s, d)))
        return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)),
                                             approximate="tanh")))


class GPT(nn.Module):
    """GPT-style LM with the output head tied to the token embedding."""

    def __init__(self, vocab=64, dim=32, heads=2, layers=2, context=16):
        super().__init__()
        self.vocab = vocab
        self.token = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(context, dim)
        self.blocks = nn.Sequential(*(GPTBlock(dim, heads)
                                      for _ in range(layers)))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.token.weight  # weight tying
        self.register_buffer("positions", torch.arange(context),
                             persistent=False)

    def forward(self, tokens):
        x = self.token(tokens) + self.position(
            self.positions[:tokens.shape[1]])
        return self.head(self.ln(self.blocks(x)))


class DecoderLM(nn.Module):
    """nn.TransformerDecoder over a learned memory (cross-attention)."""

    def __init__(self, vocab=64, dim=32, heads=2, layers=1, context=16):
        super().__init__()
        self.vocab = vocab
        self.token = nn.Embedding(vocab, dim)
        self.memory = nn.Parameter(torch.randn(4, dim) * 0.02)
        layer = nn.TransformerDecoderLayer(dim, heads, 4 * dim, dropout=0.0,
                                           batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, layers)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(context), persistent=False)

    def forward(self, tokens):
        x = self.token(tokens)
        memory = self.memory.expand(tokens.shape[0], -1, -1)
        return self.head(self.decoder(x, memory, tgt_mask=self.mask))


class ConvBN(nn.Module):
    """Conv2d + BatchNorm2d + ReLU on 64x64 maps: batch norm's statistics
    and gradients reduce over N*H*W = 31752 values per channel at batch 8,
    where float accumulation loses to PyTorch's double (the numerics
    test's sharpest case)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 32, 3)
        self.bn = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32, CLASSES)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def conv_bn():
    torch.manual_seed(0)
    return StepSpec(ConvBN(), (3, 64, 64))


def lm_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           targets.reshape(-1))


def _lm(model, context=16):
    return StepSpec(model, (context,), torch.int64, (context,), torch.int64,
                    lm_loss)


def encoder_lm():
    torch.manual_seed(0)
    return _lm(EncoderLM())


def decoder_lm():
    torch.manual_seed(0)
    return _lm(DecoderLM())


def gpt():
    torch.manual_seed(0)
    return _lm(GPT())


ZOO = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small",
       "efficientnet_b0", "shufflenet_v2", "squeezenet", "densenet",
       "regnet", "convnext", "vit", "swin", "encoder_lm", "decoder_lm",
       "gpt"]

# Factories whose export still meets unsupported ops (docs/export.md lists
# them): gradcomm-export reports all of them at once.
NOT_YET = []
