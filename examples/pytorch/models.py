"""Example models for gradcomm-export (`models.py:mlp`, `:cnn`,
`:resnet18`, `:resnet18_narrow`, `:transformer`): each factory returns a
gradcomm.torch.export.StepSpec."""

import inspect

import torch
import torch.nn as nn
import torch.nn.functional as F

from gradcomm.torch.export import StepSpec


class MLP(nn.Module):
    """The Fashion-MNIST MLP of the demo: 784-128-10, ReLU."""

    def __init__(self, hidden=128):
        super().__init__()
        self.fc1 = nn.Linear(784, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class CNN(nn.Module):
    """A small Fashion-MNIST CNN: two 3x3 convs with batch norm, ReLU and
    2x2 max pooling, then one linear layer."""

    def __init__(self, channels=(8, 16)):
        super().__init__()
        c1, c2 = channels
        self.conv1 = nn.Conv2d(1, c1, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(c1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(c2)
        self.fc = nn.Linear(c2 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(x.flatten(1))


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention and a GELU MLP."""

    def __init__(self, dim, heads, context):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        mask = torch.ones(context, context).triu(1).bool()
        self.register_buffer("causal_mask", mask, persistent=False)

    def forward(self, x):
        b, s, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.reshape(b, s, h, d // h).transpose(1, 2).reshape(b * h, s, d // h)
        k = k.reshape(b, s, h, d // h).transpose(1, 2).reshape(b * h, s, d // h)
        v = v.reshape(b, s, h, d // h).transpose(1, 2).reshape(b * h, s, d // h)
        scores = torch.bmm(q, k.transpose(1, 2)) / (d // h) ** 0.5
        scores = scores.masked_fill(self.causal_mask[:s, :s], float("-inf"))
        attention = torch.bmm(torch.softmax(scores, dim=-1), v)
        attention = attention.reshape(b, h, s, d // h).transpose(1, 2)
        x = x + self.proj(attention.reshape(b, s, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TinyLM(nn.Module):
    """A 2-layer character-level transformer language model."""

    def __init__(self, vocab=64, dim=32, heads=2, layers=2, context=16):
        super().__init__()
        self.vocab = vocab
        self.token = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, context)
                                    for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("positions", torch.arange(context),
                             persistent=False)

    def forward(self, tokens):
        s = tokens.shape[1]
        x = self.token(tokens) + self.position(self.positions[:s])
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


_ENCODER_TAKES_IS_CAUSAL = "is_causal" in inspect.signature(
    nn.TransformerEncoder.forward).parameters


class TransformerLM(nn.Module):
    """A character-level transformer language model from stock torch.nn
    blocks (nn.TransformerEncoder, pre-norm, causal mask as the tutorials
    pass it), large enough that communication matters: 6 layers of width
    384, about 10.7M parameters (the peer comparison, bench/peers)."""

    def __init__(self, vocab=64, dim=384, heads=6, layers=6, context=32):
        super().__init__()
        self.token = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(context, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0,
                                           activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers,
                                             enable_nested_tensor=False)
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("positions", torch.arange(context),
                             persistent=False)
        self.register_buffer("causal_mask", nn.Transformer
                             .generate_square_subsequent_mask(context),
                             persistent=False)

    def forward(self, tokens):
        s = tokens.shape[1]
        x = self.token(tokens) + self.position(self.positions[:s])
        mask = self.causal_mask[:s, :s]
        # torch 1.13's encoder takes no is_causal (it reads the mask only).
        causal = {"is_causal": True} if _ENCODER_TAKES_IS_CAUSAL else {}
        x = self.encoder(x, mask=mask, **causal)
        return self.head(self.ln(x))


def lm_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           targets.reshape(-1))


def mlp():
    torch.manual_seed(0)
    return StepSpec(MLP(), (1, 28, 28))


def cnn():
    torch.manual_seed(0)
    return StepSpec(CNN(), (1, 28, 28))


def resnet18_module():
    """torchvision's ResNet-18 adapted to 28x28 grey images: a 3x3 stride-1
    first convolution on one channel, the stock max pool and stages (the
    ScaleCom study's ResNet-18, docs/results.md)."""
    import torchvision
    model = torchvision.models.resnet18(weights=None, num_classes=10)
    model.conv1 = nn.Conv2d(1, 64, 3, 1, 1, bias=False)
    return model


def resnet18_narrow_module(width=8):
    """ResNet-18 at an eighth of the width: stages of 8, 16, 32 and 64
    channels, 176K parameters, the same blocks, strides and depth as
    resnet18_module (torchvision's BasicBlock). A step of 32 images takes
    23 ms on one core here against 325 ms at full width, which is what lets
    the learner study reach 64 learners (docs/results.md, "From 2 to 64
    learners")."""
    from torchvision.models.resnet import BasicBlock

    def stage(inputs, planes, stride):
        downsample = None
        if stride != 1 or inputs != planes:
            downsample = nn.Sequential(
                nn.Conv2d(inputs, planes, 1, stride, bias=False),
                nn.BatchNorm2d(planes))
        return nn.Sequential(BasicBlock(inputs, planes, stride, downsample),
                             BasicBlock(planes, planes))

    widths = [width, 2 * width, 4 * width, 8 * width]
    return nn.Sequential(
        nn.Conv2d(1, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width),
        nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1),
        stage(width, widths[0], 1), stage(widths[0], widths[1], 2),
        stage(widths[1], widths[2], 2), stage(widths[2], widths[3], 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(widths[3], 10))


def resnet18():
    torch.manual_seed(0)
    return StepSpec(resnet18_module(), (1, 28, 28))


def resnet18_narrow():
    torch.manual_seed(0)
    return StepSpec(resnet18_narrow_module(), (1, 28, 28))


def transformer(context=16):
    torch.manual_seed(0)
    return StepSpec(TinyLM(context=context), (context,), torch.int64,
                    (context,), torch.int64, lm_loss)
